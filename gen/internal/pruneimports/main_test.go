package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrune(t *testing.T) {
	for _, tt := range []struct {
		desc, in, want string
	}{
		{
			desc: "drops unused, keeps used, named, blank and dot imports",
			in: `package p

import (
	"encoding/json"
	"fmt"
	oc "example.com/gen/oc"
	_ "embed"
	. "strings"
	"github.com/openconfig/goyang/pkg/yang"
)

var _ = fmt.Sprint(oc.X, ToUpper("a"))
`,
			want: `package p

import (
	_ "embed"
	oc "example.com/gen/oc"
	"fmt"
	. "strings"
)

var _ = fmt.Sprint(oc.X, ToUpper("a"))
`,
		},
		{
			desc: "removes an import block left empty",
			in: `package p

import (
	"fmt"
)

const X = 1
`,
			want: `package p

const X = 1
`,
		},
		{
			desc: "a used single import stays",
			in: `package p

import "reflect"

var T = reflect.TypeOf(0)
`,
			want: `package p

import "reflect"

var T = reflect.TypeOf(0)
`,
		},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := prune("x.go", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want, +got):\n%s", diff)
			}
		})
	}
}

func TestPruneRejectsInvalidGo(t *testing.T) {
	if _, err := prune("x.go", []byte("package p\nfunc {")); err == nil {
		t.Error("prune accepted invalid Go")
	}
}
