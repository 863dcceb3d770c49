package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// FuzzParse feeds arbitrary YAML to the scenario parser. It must never panic,
// and every error it returns must name the file and a line, as users get them.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../../scenarios/*.yaml", "../../scenarios/compare/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	located := regexp.MustCompile(`^fuzz\.yaml(:\d+(:\d+)?)?: `)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Files a scenario refers to (CDFs) resolve against the test's
		// directory, so relative references stay inside testdata.
		_, err := Parse("fuzz.yaml", data)
		if err == nil {
			return
		}
		for _, e := range Errors(err) {
			if !located.MatchString(e.Error()) {
				t.Fatalf("error without file and line: %q", e.Error())
			}
		}
		var el ErrorList
		if !errors.As(err, &el) && len(Errors(err)) == 0 {
			t.Fatalf("error of unexpected type %T: %v", err, err)
		}
	})
}

// FuzzUnits checks the unit grammar: no panic, and every accepted value
// prints back to a string that parses to the same value.
func FuzzUnits(f *testing.F) {
	for _, s := range []string{"100Gbps", "25G", "1.5Mbps", "0", "125MB", "64KiB", "10ms", "5us", "1.5s", "7µs", "-1ms", "1e9bps", "G", "9999999999999999999TB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRate(s); err == nil {
			if back, err := ParseRate(r.String()); err != nil || back != r {
				t.Fatalf("rate %q -> %v -> %q -> %v, %v", s, r, r.String(), back, err)
			}
		}
		if z, err := ParseSize(s); err == nil {
			if back, err := ParseSize(z.String()); err != nil || back != z {
				t.Fatalf("size %q -> %v -> %q -> %v, %v", s, z, z.String(), back, err)
			}
		}
		if d, err := ParseDuration(s); err == nil && d < 0 {
			t.Fatalf("duration %q parsed negative: %v", s, d)
		}
	})
}
