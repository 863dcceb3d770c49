package compare

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzReadEvalCSV: an evaluation file (`sim eval --baseline`, the stored
// scenarios/family/evals) never panics the reader; a bad one is a CSVError
// naming the file and a line, and one it accepts writes back to a file it
// reads as the same rows, which writes again byte for byte.
func FuzzReadEvalCSV(f *testing.F) {
	names, err := filepath.Glob("../../scenarios/family/evals/*.csv")
	if err != nil || len(names) < 3 {
		f.Fatalf("the stored sets: %v %v, want train, test and a retired one", names, err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		// The header and two rows of each stored set.
		lines := strings.SplitAfterN(string(data), "\n", 4)
		f.Add([]byte(strings.Join(lines[:3], "")))
	}
	var b bytes.Buffer
	if err := WriteEvalCSV(&b, evalRows()); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte("set,seed\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ReadEvalCSV("f.csv", bytes.NewReader(data))
		if err != nil {
			var ce *CSVError
			if !errors.As(err, &ce) || ce.File != "f.csv" || ce.Line < 1 {
				t.Fatalf("error %v (%T) does not name the file and a line", err, err)
			}
			return
		}
		var a bytes.Buffer
		if err := WriteEvalCSV(&a, tab.Rows); err != nil {
			if len(tab.Rows) == 0 {
				return
			}
			t.Fatalf("rows read cannot be written: %v", err)
		}
		again, err := ReadEvalCSV("a.csv", bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("written rows not read back: %v\n%s", err, a.String())
		}
		if diff := cmp.Diff(tab.Rows, again.Rows, cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("read, written and read again (-first, +again):\n%s", diff)
		}
		var c bytes.Buffer
		if err := WriteEvalCSV(&c, again.Rows); err != nil || c.String() != a.String() {
			t.Fatalf("written twice differs (%v):\n%s\n%s", err, a.String(), c.String())
		}
	})
}
