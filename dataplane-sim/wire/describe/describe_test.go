package describe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire/wiretest"
)

// FuzzDescribe: whatever bytes `lhcnp decode` reads, decoded or not, are
// described without a panic as exactly one text line and one line of valid
// JSON, as scripts that read the output rely on.
func FuzzDescribe(f *testing.F) {
	frames, err := wiretest.Frames()
	if err != nil {
		f.Fatal(err)
	}
	for _, fr := range frames {
		f.Add(fr.Bytes)
	}
	for _, fr := range wiretest.Broken(frames) {
		f.Add(fr.Bytes)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d wire.Decoder
		var fr wire.Frame
		derr := d.Decode(b, &fr)
		fs := Fields(&fr)
		var text, js bytes.Buffer
		if err := WriteText(&text, 1, "2026-02-01T00:00:00.000000000Z", fs, derr); err != nil {
			t.Fatal(err)
		}
		if s := text.String(); strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
			t.Fatalf("text output is not one line: %q", s)
		}
		if err := WriteJSON(&js, 1, "2026-02-01T00:00:00.000000000Z", fs, derr); err != nil {
			t.Fatal(err)
		}
		if s := js.String(); strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || !json.Valid(js.Bytes()) {
			t.Fatalf("json output is not one line of valid json: %q", s)
		}
	})
}

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
