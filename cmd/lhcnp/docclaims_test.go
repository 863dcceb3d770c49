package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// tunerStandWants returns what docs/tuner.md's "Where it stands" paragraph
// must say of the latest held-out read, from the table `make tuner-eval`
// generated for it (between <!-- tuner-eval:test --> and
// <!-- /tuner-eval:test -->): the seeds, the mean and worst-tenth ratios,
// in-sample and re-measured, and the tuner against the draft's defaults.
// The paragraph is written by hand after each read; the table is not.
func tunerStandWants(md string) ([]string, error) {
	_, block, ok := strings.Cut(md, "<!-- tuner-eval:test -->")
	block, _, ok2 := strings.Cut(block, "<!-- /tuner-eval:test -->")
	if !ok || !ok2 {
		return nil, fmt.Errorf("no <!-- tuner-eval:test --> table")
	}
	measured := map[string]string{} // a bar row's first cell → its third
	var first, last string          // the seeds of the scenario rows
	for _, l := range strings.Split(block, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 5 {
			continue
		}
		name := strings.TrimSpace(cells[1])
		if name != "" && strings.Trim(name, "0123456789") == "" {
			if first == "" {
				first = name
			}
			last = name
			continue
		}
		measured[name] = strings.TrimSpace(cells[3])
	}
	cell := func(prefix string) string {
		for name, v := range measured {
			if strings.HasPrefix(name, prefix) {
				return v
			}
		}
		return "?"
	}
	mean, _, _ := strings.Cut(cell("mean J, tuner / best static (J"), " ")
	defaults, _, _ := strings.Cut(cell("… the tuner / the draft's defaults"), ",")
	return []string{
		fmt.Sprintf("%s–%s, reads ×%s / ×%s (re-measured ×%s / ×%s", first, last, mean,
			measured["worst tenth, tuner / best static"], cell("mean J, tuner / best static re-measured"),
			measured["worst tenth, tuner / best static re-measured"]),
		"×" + defaults + " of the defaults",
	}, nil
}

// tunerStandClaims reports each figure of tunerStandWants the paragraph
// does not say.
func tunerStandClaims(md string) []error {
	wants, err := tunerStandWants(md)
	if err != nil {
		return []error{err}
	}
	_, stand, ok := strings.Cut(md, "**Where it stands")
	if !ok {
		return []error{fmt.Errorf(`no "**Where it stands" paragraph`)}
	}
	stand, _, _ = strings.Cut(stand, "\n\n")
	stand = strings.Join(strings.Fields(stand), " ")
	var errs []error
	for _, want := range wants {
		if !strings.Contains(stand, want) {
			errs = append(errs, fmt.Errorf("the \"Where it stands\" paragraph does not say %q, which the held-out table (make tuner-eval) gives", want))
		}
	}
	return errs
}

// TestTunerStandQuotesTheHeldOutTable: docs/tuner.md's summary quotes the
// latest held-out read as its generated table has it; a summary left at
// other figures than the table's fails.
func TestTunerStandQuotesTheHeldOutTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/tuner.md")
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, e := range tunerStandClaims(md) {
		t.Error(e)
	}
	wants, err := tunerStandWants(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range wants {
		// The summary's figures one read behind: a digit more on each ratio.
		stale := strings.Replace(md, want, strings.ReplaceAll(want, "×", "×1"), 1)
		if errs := tunerStandClaims(stale); len(errs) != 1 {
			t.Errorf("a summary that says %q instead: %d errors %v, want 1", strings.ReplaceAll(want, "×", "×1"), len(errs), errs)
		}
	}
}
