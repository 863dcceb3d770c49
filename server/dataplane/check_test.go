package dataplane_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// TestBuildNetworkKeyErrors: what BuildNetwork is asked for that the
// scenario lacks is a *dataplane.KeyError per item, saying which switch
// (and interface) or wired link, all of them at once, so a caller names
// its own key (lhcnp switch: the file's line). A link two interfaces
// name is named at the second in sorted order, the same every time (the
// map's order chose it). The errors named neither before.
func TestBuildNetworkKeyErrors(t *testing.T) {
	sc, err := scenario.LoadFile("../../examples/switch-scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		Served, Wired, First int
		Interface, Msg       string
	}
	tests := []struct {
		desc   string
		served []dataplane.Served
		wired  []string
		want   []key
	}{
		{desc: "no such switch", served: []dataplane.Served{{Name: "n1"}, {Name: "n9"}},
			want: []key{{1, -1, -1, "", `scenario switch-example has no switch "n9" (switches: n1, n2)`}}},
		{desc: "served twice", served: []dataplane.Served{{Name: "n1"}, {Name: "n1"}},
			want: []key{{1, -1, -1, "", `switch "n1" served twice`}}},
		{desc: "interface of no link", served: []dataplane.Served{{Name: "n2"}, {Name: "n1", Interfaces: map[string]string{"wan0": "wann"}}},
			want: []key{{1, -1, -1, "wan0", `switch n1 has no link "wann" (links: source-n1, a1-n1, a2-n1, wan)`}}},
		{desc: "a link named twice", served: []dataplane.Served{{Name: "n1", Interfaces: map[string]string{"z": "wan", "b": "wan", "a": "wan"}}},
			want: []key{{0, -1, -1, "b", `link "wan" named twice (a and b)`}, {0, -1, -1, "z", `link "wan" named twice (a and z)`}}},
		{desc: "wire of no link", served: []dataplane.Served{{Name: "n1"}}, wired: []string{"wan", "wann"},
			want: []key{{-1, 1, -1, "", `scenario switch-example has no link "wann"`}}},
		{desc: "a wire twice", served: []dataplane.Served{{Name: "n1"}}, wired: []string{"wan", "wan"},
			want: []key{{-1, 1, 0, "", `link "wan" wired twice`}}},
		{desc: "all at once", served: []dataplane.Served{{Name: "n9"}, {Name: "n1", Interfaces: map[string]string{"x": "y"}}}, wired: []string{"nope"},
			want: []key{{0, -1, -1, "", `scenario switch-example has no switch "n9" (switches: n1, n2)`},
				{1, -1, -1, "x", `switch n1 has no link "y" (links: source-n1, a1-n1, a2-n1, wan)`},
				{-1, 0, -1, "", `scenario switch-example has no link "nope"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := dataplane.BuildNetwork(sc, tt.served, dataplane.BuildOptions{Wired: tt.wired})
			if err == nil {
				t.Fatal("built")
			}
			var got []key
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				var ke *dataplane.KeyError
				if !errors.As(e, &ke) {
					t.Fatalf("%v: not a KeyError", e)
				}
				got = append(got, key{ke.Served, ke.Wired, ke.First, ke.Interface, ke.Err.Error()})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("key errors (-want +got):\n%s", diff)
			}
		})
	}
}
