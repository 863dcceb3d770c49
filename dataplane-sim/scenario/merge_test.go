package scenario

import (
	"reflect"
	"strings"
	"testing"
)

// TestMergeKeys: YAML merge keys (`<<: *anchor`, `<<: [*a, *b]`) are read
// as YAML defines them: a mapping's own keys win, then the merged mappings
// in order. A file with them loads as the file written out in full; a
// merge of something that is not a mapping, or of the mapping itself, is an
// error at its line. Before, `<<` was an unknown field and the merged keys
// were missing.
func TestMergeKeys(t *testing.T) {
	const head = "name: m\nduration: 1ms\nsample_interval: 10us\ntopology:\n  hosts: [{name: h1}, {name: h2}, {name: h3}]\n  switches: [{name: s1}]\n  links:\n"
	merged := head + `    - &l {a: h1, b: s1, rate: 25Gbps, delay: 1us, buffer: 2MB}
    - {<<: *l, a: h2}
    - {<<: [{rate: 10Gbps}, *l], a: h3, delay: 2us}
`
	full := head + `    - {a: h1, b: s1, rate: 25Gbps, delay: 1us, buffer: 2MB}
    - {a: h2, b: s1, rate: 25Gbps, delay: 1us, buffer: 2MB}
    - {a: h3, b: s1, rate: 10Gbps, delay: 2us, buffer: 2MB}
`
	got, err := Parse("merged.yaml", []byte(merged))
	if err != nil {
		t.Fatalf("merged: %v", err)
	}
	want, err := Parse("full.yaml", []byte(full))
	if err != nil {
		t.Fatalf("full: %v", err)
	}
	if !reflect.DeepEqual(got.Links, want.Links) {
		t.Errorf("links with merge keys:\n%+v\nwant as written in full:\n%+v", got.Links, want.Links)
	}
	for _, tt := range []struct {
		desc, links, want string
	}{
		{"not a mapping", "    - {<<: 5, a: h1, b: s1, rate: 1G, delay: 1us}\n", `m.yaml:8:12: topology.links[0].<<: want a mapping or a list of mappings to merge, got "5"`},
		{"itself", "    - &a {<<: *a, a: h1, b: s1, rate: 1G, delay: 1us}\n", "m.yaml:8:7: topology.links[0].<<: the mapping merges itself"},
		{"unknown key merged", "    - &d {a: h1, b: s1, rate: 1G, delay: 1us, colour: red}\n    - {<<: *d, a: h2}\n", "m.yaml:8:47: topology.links[1].colour: unknown field"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Parse("m.yaml", []byte(head+tt.links))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
}
