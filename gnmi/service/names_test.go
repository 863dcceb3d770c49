package service_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
)

// checkMemberNames walks a JSON value of the schema node e and returns a
// violation of RFC 7951 §4 for every member name that breaks its rule: a
// member is "module:name" when its module differs from its parent's (at
// the top level every member, the parent module being none), and a bare
// name otherwise. With ietf false (the JSON encoding) no name may carry a
// module.
func checkMemberNames(e *yang.Entry, v any, parentMod, path string, ietf bool) []string {
	var bad []string
	switch x := v.(type) {
	case []any:
		for i, el := range x {
			bad = append(bad, checkMemberNames(e, el, parentMod, fmt.Sprintf("%s[%d]", path, i), ietf)...)
		}
	case map[string]any:
		for member, val := range x {
			mod, name, qualified := strings.Cut(member, ":")
			if !qualified {
				name, mod = member, ""
			}
			c := e.Dir[name]
			if c == nil {
				bad = append(bad, fmt.Sprintf("%s/%s: not in the schema", path, member))
				continue
			}
			want, err := c.InstantiatingModule()
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s/%s: %v", path, member, err))
				continue
			}
			switch {
			case !ietf && qualified:
				bad = append(bad, fmt.Sprintf("%s/%s: module name in the JSON encoding", path, member))
			case ietf && want != parentMod && mod != want:
				bad = append(bad, fmt.Sprintf("%s/%s: want %s:%s (the module changes from %q)", path, member, want, name, parentMod))
			case ietf && want == parentMod && qualified:
				bad = append(bad, fmt.Sprintf("%s/%s: want %s (same module as its parent)", path, member, name))
			}
			bad = append(bad, checkMemberNames(c, val, want, path+"/"+name, ietf)...)
		}
	}
	return bad
}

// yangRoot reads yang/ with goyang (not through ygot's generated schema, so
// that the test does not share the code it checks) and returns an entry
// whose children are the modules' top-level data nodes.
func yangRoot(t *testing.T) *yang.Entry {
	t.Helper()
	ms := yang.NewModules()
	for _, f := range []string{"../../yang/lhcnp-types.yang", "../../yang/lhcnp.yang"} {
		if err := ms.Read(f); err != nil {
			t.Fatal(err)
		}
	}
	if errs := ms.Process(); len(errs) > 0 {
		t.Fatal(errs)
	}
	root := &yang.Entry{Name: "/", Dir: map[string]*yang.Entry{}}
	for _, m := range []string{schema.ModuleName, schema.TypesModuleName} {
		for name, c := range yang.ToEntry(ms.Modules[m]).Dir {
			root.Dir[name] = c
		}
	}
	return root
}

// entryAt follows a data path's element names (keys ignored) from root.
func entryAt(root *yang.Entry, p *gnmi.Path) *yang.Entry {
	e := root
	for _, el := range p.GetElem() {
		if e = e.Dir[el.GetName()]; e == nil {
			return nil
		}
	}
	return e
}

// TestCheckMemberNames: the checker itself finds each kind of violation.
func TestCheckMemberNames(t *testing.T) {
	root := yangRoot(t)
	for _, tt := range []struct {
		desc string
		doc  string
		ietf bool
		want int
	}{
		{"correct", `{"lhcnp:lhcnp":{"global":{"config":{"enabled":true}}}}`, true, 0},
		{"top level unqualified", `{"lhcnp":{"global":{}}}`, true, 1},
		{"nested qualified in the same module", `{"lhcnp:lhcnp":{"lhcnp:global":{"lhcnp:config":{}}}}`, true, 2},
		{"wrong module", `{"lhcnp-types:lhcnp":{}}`, true, 1},
		{"qualified in plain JSON", `{"lhcnp:lhcnp":{}}`, false, 1},
		{"inside a list", `{"lhcnp:lhcnp":{"interfaces":{"interface":[{"lhcnp:name":"a"}]}}}`, true, 1},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.doc), &v); err != nil {
				t.Fatal(err)
			}
			if got := checkMemberNames(root, v, "", "", tt.ietf); len(got) != tt.want {
				t.Errorf("%d violations %q, want %d", len(got), got, tt.want)
			}
		})
	}
}

// TestGetMemberNamesRFC7951 walks every JSON_IETF (and JSON) value Get
// returns, for nodes at every depth, and checks each member name against
// RFC 7951 §4.
func TestGetMemberNamesRFC7951(t *testing.T) {
	e := newEnv(t)
	root := yangRoot(t)
	paths := []string{
		"/", "/lhcnp", "/lhcnp/global", "/lhcnp/interfaces", "/lhcnp/interfaces/interface[name=wan0]",
		"/lhcnp/interfaces/interface[name=wan0]/config", q3, q3 + "/config", q3 + "/state", q3 + "/state/counters",
		"/lhcnp/interfaces/interface/queues/queue/state", "/lhcnp/.../counters",
	}
	checked := 0
	for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON} {
		for _, p := range paths {
			resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{mustPath(p)}, Encoding: enc})
			if err != nil {
				t.Fatalf("Get %s %v: %v", p, enc, err)
			}
			for _, n := range resp.GetNotification() {
				for _, u := range n.GetUpdate() {
					full := schema.Join(n.GetPrefix(), u.GetPath())
					node := entryAt(root, full)
					if node == nil {
						t.Fatalf("%s: update path %s not in yang/", p, schema.PathString(full))
					}
					raw := u.GetVal().GetJsonIetfVal()
					if enc == gnmi.Encoding_JSON {
						raw = u.GetVal().GetJsonVal()
					}
					var v any
					if err := json.Unmarshal(raw, &v); err != nil {
						t.Fatalf("%s: %v", p, err)
					}
					if _, ok := v.(map[string]any); ok {
						checked++
					}
					for _, b := range checkMemberNames(node, v, "", schema.PathString(full), enc == gnmi.Encoding_JSON_IETF) {
						t.Errorf("Get %s %v: %s", p, enc, b)
					}
				}
			}
		}
	}
	if checked < 2*(len(paths)-1) {
		t.Errorf("only %d JSON objects checked", checked)
	}
}
