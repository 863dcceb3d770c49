package modeltest

import (
	"strings"
	"testing"

	"github.com/openconfig/goyang/pkg/yang"
)

// leafEntry parses the lhcnp module from ../ (goyang: the generated
// schema drops descriptions and units) and returns the entry at path, its
// elements separated by "/".
func leafEntry(t *testing.T, path string) *yang.Entry {
	t.Helper()
	ms := yang.NewModules()
	ms.AddPath("..")
	e, errs := ms.GetModule("lhcnp")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if e = e.Dir[name]; e == nil {
			t.Fatalf("%s: no %s", path, name)
		}
	}
	return e
}

// TestSuppressedFlowIntervalDescription: a queue's suppressed-flow-interval
// counts, besides the notifications within a flow's per-flow interval, those
// per-flow-rtt (and with it repeat-resume) holds back after the node's last
// one to the flow (lhcnp's fire and resume); its description says so.
func TestSuppressedFlowIntervalDescription(t *testing.T) {
	e := leafEntry(t, "/lhcnp/interfaces/interface/queues/queue/state/counters/suppressed-flow-interval")
	for _, want := range []string{"per-flow interval", "per-flow-rtt", "repeat-resume"} {
		if !strings.Contains(strings.Join(strings.Fields(e.Description), " "), want) {
			t.Errorf("suppressed-flow-interval's description does not name %q:\n%s", want, e.Description)
		}
	}
}
