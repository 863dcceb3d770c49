package grafanasql

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	from := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	to := from.Add(time.Minute)
	vars := map[string]string{"target": "n1", "queue": "3"}
	for _, tt := range []struct {
		desc, sql, want, err string
	}{
		{"time filter", "WHERE $__timeFilter(ts)", "WHERE ts BETWEEN '2026-11-24T09:00:00Z' AND '2026-11-24T09:01:00Z'", ""},
		{"from and to", "$__timeFrom() $__timeTo()", "'2026-11-24T09:00:00Z' '2026-11-24T09:01:00Z'", ""},
		{"variables", "target = '$target' AND queue = ${queue}", "target = 'n1' AND queue = 3", ""},
		{"unknown macro", "$__interval", "", "macro $__interval"},
		{"unknown variable", "x = '$nope'", "", "$nope"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := Expand(tt.sql, from, to, vars)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseExpand: any dashboard JSON and any SQL give a dashboard or an
// error, never a panic.
func FuzzParseExpand(f *testing.F) {
	if b, err := os.ReadFile("../grafana/dashboards/lhcnp-lab.json"); err == nil {
		f.Add(b, "WHERE $__timeFilter(ts) AND t = '$target'")
	}
	f.Add([]byte(`{"panels":[{"title":"x","targets":[{"rawSql":"$__timeFrom()"}]}]}`), "${queue")
	f.Fuzz(func(t *testing.T, data []byte, sql string) {
		d, err := Parse(data)
		if err == nil {
			for _, q := range d.Queries {
				_, _ = Expand(q.SQL, time.Unix(0, 0), time.Unix(60, 0), map[string]string{"target": "n1"})
			}
		}
		_, _ = Expand(sql, time.Unix(0, 0), time.Unix(60, 0), map[string]string{"target": "n1"})
	})
}
