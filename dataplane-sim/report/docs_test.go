package report

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// Every key summary.json can hold is named in docs/scenarios.md's
// description of the file, so that a reader of the page knows every key
// they find (the ports' congested-period keys were missing).
func TestSummaryKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	const from, to = "`summary.json` (keys in this order", "## Current limits"
	text := string(doc)
	i := strings.Index(text, from)
	if i < 0 {
		t.Fatalf("docs/scenarios.md has no %q", from)
	}
	j := strings.Index(text[i:], to)
	if j < 0 {
		t.Fatalf("docs/scenarios.md has no %q after %q", to, from)
	}
	section := text[i : i+j]
	for _, v := range []any{Summary{}, Totals{}, PortSummary{}, FlowSummary{}, Feedback{}, FlowFeedback{}} {
		typ := reflect.TypeOf(v)
		for k := range typ.NumField() {
			key, _, _ := strings.Cut(typ.Field(k).Tag.Get("json"), ",")
			if key == "" || key == "-" {
				continue
			}
			if !strings.Contains(section, "`"+key+"`") && !strings.Contains(section, "`"+key+"[]`") {
				t.Errorf("summary.json key %q (%s.%s) is not named in docs/scenarios.md's description of summary.json", key, typ.Name(), typ.Field(k).Name)
			}
		}
	}
}
