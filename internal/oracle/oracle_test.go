package oracle_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/internal/oracle"
)

// ending records how Missing ends a test; like testing.T's, its Fatalf
// and Skipf end the goroutine.
type ending struct {
	testing.TB
	how string
}

func (e *ending) Helper() {}
func (e *ending) Fatalf(format string, args ...any) {
	e.how = "fail: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (e *ending) Skipf(format string, args ...any) {
	e.how = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissing(t *testing.T) {
	err := errors.New("gnmic not found: set GNMIC")
	for _, tt := range []struct {
		desc        string
		ci, oracles string
		want        string
	}{
		{desc: "required", oracles: "required", want: "fail: gnmic not found: set GNMIC (required: CI=true or LHCNP_ORACLES=required)"},
		{desc: "in CI", ci: "true", want: "fail: gnmic not found: set GNMIC (required: CI=true or LHCNP_ORACLES=required)"},
		{desc: "optional", oracles: "optional", want: "skip: SKIPPED: gnmic not found: set GNMIC"},
		{desc: "unset", want: "skip: SKIPPED: gnmic not found: set GNMIC"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			t.Setenv("LHCNP_ORACLES", tt.oracles)
			e := &ending{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				oracle.Missing(e, err)
			}()
			<-done
			if diff := cmp.Diff(tt.want, e.how); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
