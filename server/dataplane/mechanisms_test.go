package dataplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every mechanism beside Long-haul CNP is registered once, and the order
// of a Set's translation and configuration is the same every time.
func TestMechanismsRegistered(t *testing.T) {
	var got []string
	beside := map[string]bool{}
	for _, k := range kinds() {
		got = append(got, k.name)
		if k.beside {
			beside[k.name] = true
		}
	}
	if diff := cmp.Diff([]string{"fast-cnp", "fcn", "rate-advice", "switch-cnp"}, got); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"rate-advice": true}, beside); diff != "" {
		t.Errorf("beside the mode (-want +got):\n%s", diff)
	}
}
