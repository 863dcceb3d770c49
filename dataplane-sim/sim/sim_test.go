package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

func load(t testing.TB, name string, opts ...scenario.Option) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadFile(filepath.Join("..", "..", "scenarios", name), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Two runs of the same scenario and seed write byte-identical CSV and JSON.
func TestDeterministic(t *testing.T) {
	sc := load(t, "incast-dcqcn.yaml")
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		if _, err := Run(context.Background(), sc, d, WithDuration(time.Millisecond), WithoutPlots()); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{QueuesCSV, RatesCSV, CountersCSV, SummaryJSON} {
		a, err := os.ReadFile(filepath.Join(dirs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dirs[1], f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with the same seed", f)
		}
		if len(a) == 0 {
			t.Errorf("%s is empty", f)
		}
	}
}

func TestSummarySanity(t *testing.T) {
	sc := load(t, "incast-dcqcn.yaml")
	dir := t.TempDir()
	sum, err := Run(context.Background(), sc, dir, WithDuration(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sum.Ports {
		if p.Utilisation < 0 || p.Utilisation > 1 {
			t.Errorf("port %s->%s utilisation %v outside [0, 1]", p.Node, p.Port, p.Utilisation)
		}
		if p.P99QueueBytes > p.PeakQueueBytes {
			t.Errorf("port %s->%s p99 %d above peak %d", p.Node, p.Port, p.P99QueueBytes, p.PeakQueueBytes)
		}
	}
	finished := 0
	for _, f := range sum.Flows {
		if f.Finished {
			finished++
			if f.FCTNs == nil || *f.FCTNs <= 0 || f.Slowdown == nil || *f.Slowdown < 1 {
				t.Errorf("finished flow %s: fct %v slowdown %v", f.Name, f.FCTNs, f.Slowdown)
			}
		} else if f.FCTNs != nil {
			t.Errorf("unfinished flow %s has an FCT", f.Name)
		}
	}
	if finished == 0 {
		t.Errorf("no flow finished in 2 ms; summary: %+v", sum.Flows)
	}
	if sum.Totals.JainFairness <= 0 || sum.Totals.JainFairness > 1 {
		t.Errorf("Jain fairness %v", sum.Totals.JainFairness)
	}
	// The port into h0 carries the 4:1 incast: it queues and marks.
	var into *report.PortSummary
	for i, p := range sum.Ports {
		if p.Node == "tor" && p.Port == "h0" {
			into = &sum.Ports[i]
		}
	}
	if into == nil || into.PeakQueueBytes == 0 || into.ECNMarks == 0 || sum.Notifications["cnp"] == 0 {
		t.Errorf("incast port = %+v, notifications %v", into, sum.Notifications)
	}
	for _, f := range []string{QueuesCSV, RatesCSV, CountersCSV, SummaryJSON, QueuesPNG, RatesPNG} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	var js map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, SummaryJSON))
	if err := json.Unmarshal(b, &js); err != nil {
		t.Errorf("summary.json: %v", err)
	}
}

func TestCancel(t *testing.T) {
	sc := load(t, "incast-dcqcn.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := Run(ctx, sc, t.TempDir(), WithoutPlots(), WithProgress(func(p Progress) {
		calls++
		if calls == 3 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %v, want context.Canceled", err)
	}
}

func TestNoModel(t *testing.T) {
	sc := load(t, "incast-dcqcn.yaml")
	sc.Mechanism.Kind = scenario.MechanismKind("hpcc")
	_, err := Run(context.Background(), sc, t.TempDir(), WithDuration(10*time.Microsecond), WithoutPlots())
	if !errors.Is(err, ErrNoModel) {
		t.Errorf("Run(hpcc) = %v, want ErrNoModel", err)
	}
}

// Every kind a scenario may name has an installer.
func TestEveryKindHasAnInstaller(t *testing.T) {
	for _, k := range scenario.MechanismKinds() {
		if _, ok := install.Installer(k); !ok {
			t.Errorf("mechanism %s: a scenario may name it, and nothing installs it", k)
		}
	}
}

// The scenario's routes are the paths the network model forwards on.
func TestRoutesMatchModel(t *testing.T) {
	for _, path := range []string{"../../scenarios/websearch.yaml", "../../scenarios/section7.yaml", "../scenario/testdata/good.yaml"} {
		sc, err := scenario.LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := newRunner(sc, options{duration: 1})
		sc.Mechanism.Kind = scenario.MechanismDCQCN
		if err := r.build(); err != nil {
			t.Fatal(err)
		}
		for _, rt := range sc.Routes {
			dst := r.net.NodeByName(rt.Dst)
			got := []string{rt.Src}
			pt := r.net.NodeByName(rt.Src).(*netsim.Host).Port()
			for pt != nil && len(got) < 32 {
				next := pt.Peer().Node()
				got = append(got, next.Name())
				if next == dst {
					break
				}
				pt = next.(*netsim.Switch).Route(dst.ID())
			}
			if diff := cmp.Diff(rt.Path, got); diff != "" {
				t.Errorf("%s: route %s->%s (-scenario, +model):\n%s", path, rt.Src, rt.Dst, diff)
			}
		}
	}
}

// The §7 numbers: K_max 125 MB and K_min 62.5 MB on N1's 100 Gb/s WAN port
// with RTT_est 10 ms; K_base is the floor on a short link.
func TestBDPThresholds(t *testing.T) {
	sc := load(t, "section7.yaml")
	p := sc.Mechanism.LongHaulCNP()
	kmax, kmin := BDPThresholds(p, 100e9, 5*time.Millisecond)
	if kmax != 125_000_000 || kmin != 62_500_000 {
		t.Errorf("WAN: K_max %d, K_min %d; want 125000000, 62500000", kmax, kmin)
	}
	kmax, kmin = BDPThresholds(p, 100e9, time.Microsecond)
	if kmax != 64_000 || kmin != 32_000 {
		t.Errorf("DC link: K_max %d, K_min %d; want 64000, 32000", kmax, kmin)
	}
	// Installed on the ports of the congestion-aware nodes.
	r := newRunner(sc, options{duration: 1})
	if err := r.build(); err != nil {
		t.Fatal(err)
	}
	a, b, _ := r.env.LinkPorts("wan")
	for _, pt := range []*netsim.Port{a, b} {
		if e := pt.Config().ECN[0]; e.KMaxBytes != 125_000_000 || e.KMinBytes != 62_500_000 {
			t.Errorf("%s: ECN %+v", pt.Name(), e)
		}
	}
	for _, w := range r.warnings {
		if strings.Contains(w, "long-haul-cnp") {
			t.Errorf("warning with the Long-haul CNP node installed: %s", w)
		}
	}
}

// Events change links and flows at their times; a mechanism passed with
// WithMechanism is installed and can count notifications.
func TestEventsAndPluggedMechanism(t *testing.T) {
	sc, err := scenario.LoadFile("../scenario/testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	installed := false
	fake := MechanismFunc(func(env *Env) error {
		installed = len(env.Nodes) == 1 && env.Nodes[0].Name() == "s1"
		env.Sim.AtFunc(500_000, func() { env.Count("s1", "fast-cnp", 2) })
		return nil
	})
	dir := t.TempDir()
	sum, err := Run(context.Background(), sc, dir, WithMechanism(scenario.MechanismFastCNP, fake), WithoutPlots())
	if err != nil {
		t.Fatal(err)
	}
	if !installed || sum.Notifications["fast-cnp"] != 2 {
		t.Errorf("installed %v, notifications %v", installed, sum.Notifications)
	}
	for _, p := range sum.Ports {
		if p.Node == "s1" && p.Port == "s2" && p.RateBitsPerSec != 50e9 {
			t.Errorf("core rate at the end = %d, want 50e9 (link-rate event at 6ms)", p.RateBitsPerSec)
		}
	}
	rates, err := os.ReadFile(filepath.Join(dir, RatesCSV))
	if err != nil {
		t.Fatal(err)
	}
	// "long" is stopped from 8 ms to 9 ms.
	for _, line := range strings.Split(string(rates), "\n") {
		var tns, rate int64
		var flow string
		if n, _ := fmt.Sscanf(strings.ReplaceAll(line, ",", " "), "%d %s %d", &tns, &flow, &rate); n != 3 || flow != "long" {
			continue
		}
		// Events at a sample time are applied before the sample.
		stopped := tns >= 8_000_000 && tns < 9_000_000
		if stopped != (rate == 0) {
			t.Errorf("long at %d ns: rate %d", tns, rate)
		}
	}
	counters, _ := os.ReadFile(filepath.Join(dir, CountersCSV))
	if !strings.Contains(string(counters), ",s1,-,sent_fast-cnp,2\n") {
		t.Errorf("counters.csv has no sent_fast-cnp row for s1")
	}
}

// A flow alone on an idle path finishes in its ideal FCT, which counts the
// CM connection round trip before the first data packet: slowdown ~1.
func TestIdealFCTIncludesCM(t *testing.T) {
	const y = `
name: alone
duration: 5ms
sample_interval: 100us
topology:
  hosts: [{name: h1}, {name: h2}]
  switches: [{name: s1}]
  links:
    - {a: h1, b: s1, rate: 100Gbps, delay: 200us}
    - {a: s1, b: h2, rate: 100Gbps, delay: 200us}
traffic:
  flows:
    - {name: f, src: h1, dst: h2, src_qp: 10, dst_qp: 10, size: 1MB}
`
	sc, err := scenario.Parse("alone.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sc, t.TempDir(), WithoutPlots())
	if err != nil {
		t.Fatal(err)
	}
	f := sum.Flows[0]
	if !f.Finished || f.Slowdown == nil {
		t.Fatalf("flow %+v did not finish", f)
	}
	// Two round trips of 800 µs (connect, then data and the last ACK) and
	// 80 µs of serialisation: without the CM round trip the slowdown would
	// be about 1.9.
	if *f.Slowdown < 1 || *f.Slowdown > 1.02 {
		t.Errorf("slowdown %.4f (fct %d ns, ideal %d ns), want 1..1.02", *f.Slowdown, *f.FCTNs, *f.IdealFCTNs)
	}
}

// TestLossyFlowFinishes: with nic.loss_recovery none nothing is resent, and the receiver acknowledges
// past a gap, so a finite flow whose last packet and its ACK arrive
// finishes without the bytes it lost, and summary.json says so in a
// warning (docs/engine.md, "Loss recovery"; it said such a flow never
// completes). Two 1 MB flows into one 10 Gb/s port of 20 KB, DCQCN off:
// both "finish" in 0.84 ms, which 2 MB at 10 Gb/s cannot.
func TestLossyFlowFinishes(t *testing.T) {
	sum := runYAML(t, lossyYAML+"nic: {loss_recovery: none}\n")
	var missing int64
	for _, f := range sum.Flows {
		if !f.Finished || f.LostPackets == 0 || f.RxBytes >= f.SizeBytes {
			t.Errorf("flow %s: finished %v, lost %d packets, %d of %d bytes received; want finished with packets lost and bytes missing",
				f.Name, f.Finished, f.LostPackets, f.RxBytes, f.SizeBytes)
		}
		missing += f.SizeBytes - f.RxBytes
	}
	want := []string{fmt.Sprintf("2 finished flows lost packets, %d bytes in all, that are not resent (nic.loss_recovery none, docs/engine.md \"Loss recovery\"): their fct_ns and slowdown count only what arrived", missing)}
	if diff := cmp.Diff(want, sum.Warnings); diff != "" {
		t.Errorf("warnings (-want, +got):\n%s", diff)
	}
}

// TestGoBackNFlowGetsEveryByte: the same two flows with go-back-n (the
// default; here with a shorter timeout) finish with every byte, the summary
// counting the packets sent again, and no warning; 2 MB through the
// 10 Gb/s port take at least 1.68 ms.
func TestGoBackNFlowGetsEveryByte(t *testing.T) {
	sum := runYAML(t, lossyYAML+"nic: {local_ack_timeout: 8}\n")
	var last, resent int64
	for _, f := range sum.Flows {
		resent += f.RetxPackets
		if !f.Finished || f.LostPackets == 0 || f.RxBytes != f.SizeBytes || f.RetxPackets == 0 {
			t.Errorf("flow %s: finished %v, lost %d, resent %d packets, %d of %d bytes received; want finished with every byte after losses resent",
				f.Name, f.Finished, f.LostPackets, f.RetxPackets, f.RxBytes, f.SizeBytes)
		}
		if f.FCTNs != nil {
			last = max(last, f.StartNs+*f.FCTNs)
		}
	}
	if sum.Totals.RetransmittedPackets != resent {
		t.Errorf("totals.retransmitted_packets %d, the flows' sum %d", sum.Totals.RetransmittedPackets, resent)
	}
	if last < 1680000 {
		t.Errorf("the last flow finished at %d ns: 2 MB at 10 Gb/s take 1.68 ms", last)
	}
	if len(sum.Warnings) != 0 {
		t.Errorf("warnings %q, want none", sum.Warnings)
	}
}

const lossyYAML = `
name: lossy
duration: 5ms
sample_interval: 100us
topology:
  hosts: [{name: h1}, {name: h2}, {name: h3}]
  switches: [{name: s1}]
  links:
    - {a: h1, b: s1, rate: 10Gbps, delay: 1us}
    - {a: h2, b: s1, rate: 10Gbps, delay: 1us}
    - {a: s1, b: h3, rate: 10Gbps, delay: 1us, buffer: 20KB}
dcqcn: {enabled: false}
traffic:
  flows:
    - {name: a, src: h1, dst: h3, size: 1MB}
    - {name: b, src: h2, dst: h3, size: 1MB}
`

// TestRunReplacesEarlierFiles: a run into a directory that holds an
// earlier run's files leaves only its own: the plots of a run with plots
// are gone after a run WithoutPlots, the series after one WithoutSeries
// (sim compare --no-plots and phases' runs reuse their directories).
// Before, they stayed beside the new files as if they were theirs.
func TestRunReplacesEarlierFiles(t *testing.T) {
	sc := load(t, "incast-dcqcn.yaml")
	dir := t.TempDir()
	other := filepath.Join(dir, "notes.txt") // not a file of Run's: kept
	if err := os.WriteFile(other, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc string
		opts []Option
		want []string
	}{
		{"plots", nil, []string{CountersCSV, "notes.txt", QueuesCSV, QueuesPNG, RatesCSV, RatesPNG, SummaryJSON, ThresholdsCSV}},
		{"without plots", []Option{WithoutPlots()}, []string{CountersCSV, "notes.txt", QueuesCSV, RatesCSV, SummaryJSON, ThresholdsCSV}},
		{"without series", []Option{WithoutSeries()}, []string{"notes.txt", SummaryJSON}},
	} {
		if _, err := Run(context.Background(), sc, dir, append(tt.opts, WithDuration(200*time.Microsecond))...); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: the directory's files (-want, +got):\n%s", tt.desc, diff)
		}
	}
}
