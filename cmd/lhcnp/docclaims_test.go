package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/lab"
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

// delayChangeRun is what docs/scenarios.md's bullet "Packets in flight
// across a delay change" quotes of scenarios/tuner/rtt-step-back.yaml:
// the drops of `lhcnp sim run` and their frame size, the samples at which
// they rose, the packets go-back-N sent again, and the drops of the tuned
// run (`lhcnp sim compare --mechanisms long-haul-cnp+tuner`).
type delayChangeRun struct {
	drops, frameBytes, resent, tunedDrops int64
	dropSamples                           int
}

// delayChangeClaims reports each figure of run the bullet does not say,
// and a claim of the loss model the run contradicts.
func delayChangeClaims(md string, run delayChangeRun) []error {
	_, bullet, ok := strings.Cut(md, "- **Packets in flight across a delay change**")
	if !ok {
		return []error{fmt.Errorf(`no "Packets in flight across a delay change" bullet`)}
	}
	bullet, _, _ = strings.Cut(bullet, "\n- **")
	bullet = strings.Join(strings.Fields(bullet), " ")
	tuned := "(as many in its tuned run"
	if run.tunedDrops != run.drops {
		tuned = fmt.Sprintf("(%d in its tuned run", run.tunedDrops)
	}
	wants := []string{
		fmt.Sprintf("%d drops of %d-byte frames in `lhcnp sim run` of the file %s", run.drops, run.frameBytes, tuned),
	}
	if run.dropSamples == 1 {
		wants = append(wants, "all in that instant")
	}
	if run.resent > 0 {
		wants = append(wants, fmt.Sprintf("as it sends %d packets again after the %d drops here", run.resent, run.drops))
	}
	var errs []error
	for _, want := range wants {
		if !strings.Contains(bullet, want) {
			errs = append(errs, fmt.Errorf("the bullet does not say %q, which the run gives", want))
		}
	}
	if run.dropSamples != 1 && strings.Contains(bullet, "all in that instant") {
		errs = append(errs, fmt.Errorf("the bullet says the drops came all in one instant; they rose at %d samples", run.dropSamples))
	}
	if run.resent > 0 && strings.Contains(bullet, "nothing is sent again") {
		errs = append(errs, fmt.Errorf("the bullet says nothing is sent again; the run sent %d packets again", run.resent))
	}
	return errs
}

// TestDelayChangeQuotesItsRun: docs/scenarios.md quotes what `lhcnp sim
// run` and the tuned run of scenarios/tuner/rtt-step-back.yaml drop when
// the WAN's round trip steps back, and what go-back-N sends again; the
// figures are the runs' (the bullet said 424 drops in the tuned run, and
// that nothing was sent again, after go-back-N became the default).
func TestDelayChangeQuotesItsRun(t *testing.T) {
	scen := filepath.Join("..", "..", "scenarios", "tuner", "rtt-step-back.yaml")
	ctx := context.Background()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := runSim(ctx, []string{"run", scen, "--out", out, "--no-plots"}, &stdout, &stderr); err != nil {
		t.Fatalf("sim run: %v\n%s", err, stderr.String())
	}
	tunedOut := t.TempDir()
	if err := runSim(ctx, []string{"compare", scen, "--mechanisms", "long-haul-cnp+tuner", "--out", tunedOut, "--no-plots"}, &stdout, &stderr); err != nil {
		t.Fatalf("sim compare: %v\n%s", err, stderr.String())
	}
	summary := func(file string) report.Summary {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var s report.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return s
	}
	s := summary(filepath.Join(out, "summary.json"))
	run := delayChangeRun{
		drops:      s.Totals.DropPackets,
		resent:     s.Totals.RetransmittedPackets,
		tunedDrops: summary(filepath.Join(tunedOut, s.Scenario, "long-haul-cnp+tuner", "summary.json")).Totals.DropPackets,
	}
	var dropBytes int64
	for _, p := range s.Ports {
		dropBytes += p.DropBytes
	}
	if run.drops == 0 {
		t.Fatal("the run dropped nothing")
	}
	// The frames' size, to the byte below: a message's first packet
	// carries a RETH, 16 bytes more than the rest.
	run.frameBytes = dropBytes / run.drops
	// The samples at which a port's drops counter rose.
	b, err := os.ReadFile(filepath.Join(out, "counters.csv"))
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]string{}
	rose := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ",")
		if len(f) != 5 || f[3] != "drops" {
			continue
		}
		port := f[1] + "/" + f[2]
		if prev, ok := last[port]; ok && prev != f[4] || !ok && f[4] != "0" {
			rose[f[0]] = true
		}
		last[port] = f[4]
	}
	run.dropSamples = len(rose)

	md, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range delayChangeClaims(string(md), run) {
		t.Error(e)
	}
	// The check fails a bullet one run behind: each figure moved by one.
	for _, stale := range []delayChangeRun{
		{run.drops + 1, run.frameBytes, run.resent, run.tunedDrops + 1, run.dropSamples},
		{run.drops, run.frameBytes + 1, run.resent, run.tunedDrops, run.dropSamples},
		{run.drops, run.frameBytes, run.resent + 1, run.tunedDrops, run.dropSamples},
		{run.drops, run.frameBytes, run.resent, run.tunedDrops + 1, run.dropSamples},
		{run.drops, run.frameBytes, run.resent, run.tunedDrops, run.dropSamples + 1},
	} {
		if errs := delayChangeClaims(string(md), stale); len(errs) == 0 {
			t.Errorf("a run of %+v passes the bullet written for %+v", stale, run)
		}
	}
}

// labWindowClaims reports what docs/lab.md's sentence on the lab's traffic
// ("at the defaults a window adds about N flows …") does not say of
// windows of meanFlows flows, sized of them the file's repeated ones, at
// the default speed.
func labWindowClaims(md string, meanFlows float64, sized int, speed float64) []error {
	const docSpeed = 0.05 // the fabric file's speed, the sentence's hour
	windowsAnHour := 3600 * docSpeed / defaultLabFile().Period.Seconds()
	times := []string{2: "twice", 3: "three times", 4: "four times", 5: "five times", 6: "six times", 7: "seven times", 8: "eight times"}
	ratio := int(math.Round(speed / docSpeed))
	if ratio < 2 || ratio >= len(times) || float64(ratio)*docSpeed != speed {
		return []error{fmt.Errorf("the default speed %g is no small multiple of %g: reword the sentence", speed, docSpeed)}
	}
	anHour := int(math.Round(meanFlows*windowsAnHour/100)) * 100
	want := fmt.Sprintf("at the defaults a window adds about %d flows (%d repeated, the rest web-search), about %d,%03d flows an hour of wall clock at speed %g, %s as many at the default %g",
		int(math.Round(meanFlows/10))*10, sized, anHour/1000, anHour%1000, docSpeed, times[ratio], speed)
	text := strings.Join(strings.Fields(md), " ")
	if !strings.Contains(text, want) {
		return []error{fmt.Errorf("docs/lab.md does not say %q, which the lab's windows give (%.1f flows a window)", want, meanFlows)}
	}
	return nil
}

// TestLabWindowFlowsAsDocumented: docs/lab.md says how many flows a window
// of the lab's traffic adds at the defaults of lhcnp lab, and so how many
// an hour; the figures are the mean of 100 windows of lab.Loop as the lab
// builds it (the page said about 170 a window and 7,700 an hour, where the
// windows hold 181.5 on average).
func TestLabWindowFlowsAsDocumented(t *testing.T) {
	cfg := defaultLabFile()
	f, _, err := loadSwitchFile(filepath.Join("..", "..", cfg.Fabric))
	if err != nil {
		t.Fatal(err)
	}
	loop, err := lab.NewLoop(f.Scenario, lab.Traffic{Period: cfg.Period, WebSearchLoad: cfg.WebSearchLoad})
	if err != nil {
		t.Fatal(err)
	}
	const windows = 100
	var flows int
	sized := -1
	for k := 1; k <= windows; k++ {
		w, err := loop.Window(k)
		if err != nil {
			t.Fatal(err)
		}
		flows += len(w)
		var s int
		for _, fl := range w {
			if fl.Group == "" {
				s++
			}
		}
		if sized >= 0 && s != sized {
			t.Fatalf("window %d repeats %d of the file's flows, window 1 %d", k, s, sized)
		}
		sized = s
	}
	mean := float64(flows) / windows
	md, err := os.ReadFile("../../docs/lab.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range labWindowClaims(string(md), mean, sized, cfg.Speed) {
		t.Error(e)
	}
	// The check fails a sentence written for other windows or speed.
	for _, stale := range []struct {
		mean  float64
		sized int
		speed float64
	}{{mean + 10, sized, cfg.Speed}, {mean, sized + 1, cfg.Speed}, {mean, sized, cfg.Speed / 2}} {
		if errs := labWindowClaims(string(md), stale.mean, stale.sized, stale.speed); len(errs) == 0 {
			t.Errorf("windows of %.1f flows (%d repeated) at speed %g pass the sentence written for %.1f (%d) at %g",
				stale.mean, stale.sized, stale.speed, mean, sized, cfg.Speed)
		}
	}
}

// lhcnpDep is a package bin/lhcnp is built from (go list -deps
// ./cmd/lhcnp): its module (path@version, "" for the standard library and
// lhcnp's own) and the module's directory, and the packages it imports.
type lhcnpDep struct {
	module, dir string
	imports     []string
}

// lhcnpDeps lists the packages bin/lhcnp is built from, by import path.
func lhcnpDeps(t *testing.T) map[string]lhcnpDep {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}|{{with .Module}}{{if not .Main}}{{.Path}}@{{.Version}}|{{.Dir}}{{end}}{{end}}|{{join .Imports \" \"}}", "./cmd/lhcnp")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string]lhcnpDep{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "|")
		if len(f) == 3 { // the standard library's, lhcnp's own
			f = []string{f[0], "", "", f[2]}
		}
		if len(f) != 4 || (f[1] != "" && f[2] == "") {
			t.Fatalf("go list: %q: want a package, its module and directory, its imports", l)
		}
		deps[f[0]] = lhcnpDep{module: f[1], dir: f[2], imports: strings.Fields(f[3])}
	}
	return deps
}

// docsLabSays fails t unless docs/lab.md says want (its white space
// folded), what source gives.
func docsLabSays(t *testing.T, want, source string) {
	t.Helper()
	md, err := os.ReadFile("../../docs/lab.md")
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(strings.Fields(string(md)), " "); !strings.Contains(text, want) {
		t.Errorf("docs/lab.md does not say %q, what %s gives", want, source)
	}
}

// megabytes is n bytes in whole MB (10^6 bytes), rounded.
func megabytes(n int64) int64 { return (n + 500_000) / 1_000_000 }

// TestLabColdBuildModules: docs/lab.md's "How fast it comes up" says how
// many modules a cold `make lab` downloads (`go list -deps ./cmd/lhcnp`
// fetches exactly those) and their size unpacked, the files' bytes in the
// module cache; the page said 59 and 303 MB, figures of 24 November.
func TestLabColdBuildModules(t *testing.T) {
	dirs := map[string]string{}
	for _, d := range lhcnpDeps(t) {
		if d.module != "" {
			dirs[d.module] = d.dir
		}
	}
	var size int64
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			size += info.Size()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	docsLabSays(t, fmt.Sprintf("the %d modules the binary imports, %d MB unpacked", len(dirs), megabytes(size)), "go list -deps ./cmd/lhcnp")
}

// TestLabPlotModuleZips: docs/lab.md's "How fast it comes up" says what
// share of the module zips a cold build downloads is the plotting stack of
// lhcnp sim: the modules the binary needs only through gonum.org/v1/plot
// (its back ends, x/image, the fonts), by the zips' sizes in the module
// cache (go mod download -json). The page said 18 MB of 52 MB, figures of
// 24 November.
func TestLabPlotModuleZips(t *testing.T) {
	deps := lhcnpDeps(t)
	// The modules of the packages reached from cmd/lhcnp without going
	// through a package of gonum plot; the others are the plot's alone.
	const plot = "gonum.org/v1/plot"
	reached := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		d, ok := deps[p]
		if !ok || reached[p] || p == plot || strings.HasPrefix(p, plot+"/") {
			return
		}
		reached[p] = true
		for _, q := range d.imports {
			walk(q)
		}
	}
	walk("github.com/lhcnp/lhcnp/cmd/lhcnp")
	plotOnly := map[string]bool{} // every module, true for one none of whose packages is reached
	for p, d := range deps {
		if d.module != "" {
			only, seen := plotOnly[d.module]
			plotOnly[d.module] = (only || !seen) && !reached[p]
		}
	}
	args := []string{"mod", "download", "-json"}
	for m := range plotOnly {
		args = append(args, m)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download: %v", err)
	}
	var all, plotted int64
	var plots []string
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var m struct{ Path, Version, Zip string }
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(m.Zip)
		if err != nil {
			t.Fatalf("module %s@%s: %v", m.Path, m.Version, err)
		}
		all += info.Size()
		if plotOnly[m.Path+"@"+m.Version] {
			plotted += info.Size()
			plots = append(plots, m.Path)
		}
	}
	if !slices.Contains(plots, plot) || len(plots) < 2 {
		t.Fatalf("the plotting stack's modules %q: want gonum plot's and those of its back ends", plots)
	}
	slices.Sort(plots)
	t.Logf("the plotting stack, %d of %d bytes of zips: %s", plotted, all, strings.Join(plots, ", "))
	docsLabSays(t, fmt.Sprintf("with %d MB of the %d MB of module zips", megabytes(plotted), megabytes(all)), "the module cache's zips")
}

// TestREADMESaysWhatMakeInstalls: README's set-up lines name what `make
// test` and `make lab` install (scripts/deps.sh, as the Makefile runs it):
// every package deps.sh installs when it is missing, by the tool README
// names it by, and Citus for make test's `deps.sh citus`. The make test
// line left out pg_partman and Citus, the make lab paragraph pg_partman.
func TestREADMESaysWhatMakeInstalls(t *testing.T) {
	// Each Debian package of deps.sh as README names it; a package deps.sh
	// gains fails here until README (and this table) name it.
	named := map[string]string{"tshark": "tshark", "libyang2-tools": "yanglint", "chromium": "chromium", "prometheus": "promtool",
		"python3-scapy": "scapy", "postgresql": "PostgreSQL", "postgresql-15-partman": "pg_partman"}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	deps, makefile, readme := read("scripts/deps.sh"), read("Makefile"), read("README.md")
	var all, lab []string // the packages of deps.sh, and of deps.sh lab
	for _, l := range strings.Split(deps, "\n") {
		if _, p, ok := strings.Cut(l, "missing+=("); ok {
			p, _, _ = strings.Cut(p, ")")
			all = append(all, p)
		}
		if _, ps, ok := strings.Cut(l, "case $p in "); ok {
			ps, _, _ = strings.Cut(ps, ")")
			lab = strings.Split(ps, "|")
		}
	}
	if len(all) == 0 || len(lab) == 0 {
		t.Fatalf("scripts/deps.sh: no missing+=(PACKAGE) lines (%d) or no case of deps.sh lab (%d)", len(all), len(lab))
	}
	say := func(what, makeDeps, text string, pkgs []string) {
		t.Helper()
		if !strings.Contains(makefile, "./scripts/deps.sh "+makeDeps) {
			t.Errorf("Makefile: %s does not run ./scripts/deps.sh %s", what, makeDeps)
		}
		if makeDeps == "citus" {
			pkgs = append(pkgs, "Citus")
		}
		for _, p := range pkgs {
			name, ok := named[p]
			if p == "Citus" {
				name, ok = p, true
			}
			if !ok {
				t.Errorf("scripts/deps.sh installs %s: name it in README's %s and in this test's table", p, what)
				continue
			}
			if !strings.Contains(text, name) {
				t.Errorf("README's %s does not name %s, which %s installs (scripts/deps.sh %s)\n%s", what, name, what, makeDeps, text)
			}
		}
	}
	_, testLine, _ := strings.Cut(readme, "\nmake test ")
	testLine, _, _ = strings.Cut(testLine, "\n")
	say("make test", "citus", testLine, all)
	_, labPara, _ := strings.Cut(readme, "\n`make lab` installs ")
	labPara, _, _ = strings.Cut(labPara, "\n\n")
	say("make lab", "lab", labPara, lab)
}
