package startup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/schema"
)

// doc is a configuration document with a list keyed by name and one whose
// key holds a slash.
const doc = `{
  "lhcnp:lhcnp": {
    "interfaces": {"interface": [
      {"name": "a", "config": {"rtt-est": 1}},
      {"name": "b", "config": {"rtt-est": 2}}
    ]},
    "global": {"rocev2-receivers": {"receiver": [{"prefix": "10.0.0.0/8"}]}}
  }
}
`

// TestCheckAndLocate: a document's syntax error, a member given twice and
// an error about a path are placed at their line and column; a path the
// document lacks at its nearest enclosing member.
func TestCheckAndLocate(t *testing.T) {
	for _, tt := range []struct {
		desc string
		data string
		err  error // for Locate; nil: Check
		want string
	}{
		{desc: "syntax", data: "{\n  \"a\": 1,\n}\n", want: "f.json:3:1: malformed JSON: invalid character '}' looking for beginning of object key string"},
		{desc: "empty", data: "\n", want: "f.json:2:1: malformed JSON: empty document"},
		{desc: "unterminated", data: "{\"a\": [1,", want: "f.json:1:10: malformed JSON: unexpected end of the document"},
		{desc: "after the value", data: "{}\n[]", want: "f.json:2:1: malformed JSON: data after the value"},
		{desc: "twice", data: "{\"a\": {\"b\": 1,\n \"lhcnp:b\": 2}}", want: "f.json:2:2: a/b: member given twice"},
		{desc: "twice in a list", data: "[{}, {\"x\": 1, \"x\": 1}]", want: "f.json:1:15: [1]/x: member given twice"},
		{desc: "a leaf of an entry", data: doc, err: &schema.ValueError{Path: "lhcnp/interfaces/interface[name=b]/config/rtt-est", Reason: "bad"},
			want: "f.json:5:32: lhcnp/interfaces/interface[name=b]/config/rtt-est: bad"},
		{desc: "an entry by index", data: doc, err: &schema.ValueError{Path: "lhcnp/interfaces/interface[1]", Reason: "bad"},
			want: "f.json:5:7: lhcnp/interfaces/interface[1]: bad"},
		{desc: "a key with a slash", data: doc, err: &schema.ValueError{Path: "lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/prefix", Reason: "bad"},
			want: "f.json:7:51: lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/prefix: bad"},
		{desc: "a path in the message", data: doc, err: errors.New("/lhcnp/interfaces/interface[name=a]/config/kmax: must be set"),
			want: "f.json:4:21: /lhcnp/interfaces/interface[name=a]/config/kmax: must be set"},
		{desc: "a path of the schema's validation", data: doc, err: errors.New("validation: /lhcnp/interfaces/interface[name=b]/config/rtt-est: bad"),
			want: "f.json:5:32: validation: /lhcnp/interfaces/interface[name=b]/config/rtt-est: bad"},
		{desc: "a path the dataplane refuses", data: doc, err: errors.New("rejected by the dataplane: /lhcnp/interfaces/interface[name=b]: no such interface on this switch (interfaces: a): invalid configuration"),
			want: "f.json:5:7: rejected by the dataplane: /lhcnp/interfaces/interface[name=b]: no such interface on this switch (interfaces: a): invalid configuration"},
		{desc: "no path", data: doc, err: errors.New("it failed: badly"), want: "f.json: it failed: badly"},
		{desc: "an entry the document lacks", data: doc, err: &schema.ValueError{Path: "lhcnp/interfaces/interface[name=c]/config", Reason: "bad"},
			want: "f.json:3:20: lhcnp/interfaces/interface[name=c]/config: bad"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var got error
			if tt.err == nil {
				got = Check("f.json", []byte(tt.data))
			} else {
				got = Locate("f.json", []byte(tt.data), tt.err)
				if !errors.Is(got, tt.err) {
					t.Error("the located error does not wrap the error")
				}
			}
			if got == nil || got.Error() != tt.want {
				t.Errorf("got %v\nwant %s", got, tt.want)
			}
		})
	}
	if err := Check("f.json", []byte(doc)); err != nil {
		t.Errorf("Check of a good document: %v", err)
	}
}

// TestLocateListEntryFaults: a startup file whose list has an entry given
// twice, or an entry without its key, is refused by the schema's decoder
// at the line of that entry: the second of the two (the first has the
// same keys), where ygot kept the last silently.
func TestLocateListEntryFaults(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc, data, want string
	}{
		{desc: "an entry given twice", data: `{
  "lhcnp:lhcnp": {
    "interfaces": {"interface": [
      {"name": "a", "config": {"rtt-est": 1}},
      {"name": "b", "config": {"rtt-est": 1}},
      {"name": "a", "config": {"rtt-est": 2}}
    ]}
  }
}
`, want: `f.json:6:7: lhcnp/interfaces/interface[name=a]: list entry given twice (entries 0 and 2 of the array): a list's keys are unique (RFC 7950 §7.8.2)`},
		{desc: "an entry without its key", data: `{
  "lhcnp:lhcnp": {
    "interfaces": {"interface": [
      {"name": "a", "config": {"rtt-est": 1}},
      {"config": {"name": "b"}}
    ]}
  }
}
`, want: `f.json:5:7: lhcnp/interfaces/interface[1]: a list entry without its key "name"`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if err := Check("f.json", []byte(tt.data)); err != nil {
				t.Fatalf("Check: %v", err)
			}
			_, derr := schema.DecodeJSON(sch.Root(), []byte(tt.data))
			if derr == nil {
				t.Fatal("DecodeJSON took the document")
			}
			if got := Locate("f.json", []byte(tt.data), derr); got.Error() != tt.want {
				t.Errorf("got %v\nwant %s", got, tt.want)
			}
		})
	}
}

// FuzzLocate: any document, checked and decoded against the schema as a
// switch loads its startup configuration: no panic, and every error names
// the file.
func FuzzLocate(f *testing.F) {
	for _, p := range []string{"switch.json", "lab-n1.json", "lab-n2.json"} {
		b, err := os.ReadFile(filepath.Join("../../examples", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(doc))
	f.Add([]byte(`{"a": [1, {"b": {"b": 2, "b": 3}}]}`))
	sch, err := schema.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check("f.json", data)
		if err == nil {
			if _, derr := schema.DecodeJSON(sch.Root(), data); derr != nil {
				err = Locate("f.json", data, derr)
			}
		}
		if err != nil && !strings.HasPrefix(err.Error(), "f.json") {
			t.Errorf("error without the file: %v", err)
		}
	})
}
