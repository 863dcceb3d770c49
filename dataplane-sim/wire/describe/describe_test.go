package describe

import (
	"bytes"
	"testing"
)

// TestWriteTextQuotes: a string value with a space, a quote, an equals
// sign, a line break, a tab or another control character is quoted, so a
// frame is always one line of space-separated key=value pairs (a Device
// Identifier is any UTF-8 string the sender chose).
func TestWriteTextQuotes(t *testing.T) {
	for _, c := range []struct {
		desc, value, want string
	}{
		{"plain", "N1.dci-east", `k=N1.dci-east`},
		{"space", "N1 east", `k="N1 east"`},
		{"equals", "a=b", `k="a=b"`},
		{"newline", "N1\nrack", `k="N1\nrack"`},
		{"carriage return", "N1\rx", `k="N1\rx"`},
		{"tab", "N1\teast", `k="N1\teast"`},
		{"nul", "N1\x00", `k="N1\x00"`},
		{"non-breaking space", "N1\u00a0east", `k="N1\u00a0east"`},
		{"non-ascii letters", "Zürich", `k=Zürich`},
	} {
		t.Run(c.desc, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, 1, "t", []Field{{Key: "k", Value: c.value}}, nil); err != nil {
				t.Fatal(err)
			}
			if got, want := b.String(), "1 t "+c.want+"\n"; got != want {
				t.Errorf("WriteText = %q, want %q", got, want)
			}
		})
	}
}
