package scenario

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBadScenarios(t *testing.T) {
	tests := []struct {
		desc string
		file string
		// want is the first error: file (relative to testdata), line,
		// field path and a fragment of the reason.
		wantFile   string
		wantLine   int
		wantField  string
		wantReason string
		wantCount  int // total errors; 0 means 1
	}{
		{"unknown field", "bad_unknown_field.yaml", "", 6, "topology.links[0].bufer", "unknown field", 0},
		{"missing required field", "bad_missing_duration.yaml", "", 1, "duration", "missing required field", 0},
		{"bad rate unit", "bad_rate_unit.yaml", "", 8, "topology.links[0].rate", `unknown rate unit "GB/s"`, 0},
		{"rate without unit", "bad_rate_nounit.yaml", "", 6, "topology.links[0].rate", "has no unit", 0},
		{"negative delay", "bad_negative_delay.yaml", "", 6, "topology.links[0].delay", `negative value "-5us"`, 0},
		{"fraction of a byte", "bad_size_fraction.yaml", "", 6, "topology.links[0].buffer", "not a whole number of bytes", 0},
		{"undefined link endpoint", "bad_undefined_endpoint.yaml", "", 4, "topology.hosts[1].name", "host h2 has no link", 2},
		{"duplicate node name", "bad_duplicate_name.yaml", "", 6, "topology.switches[0].name", `duplicate node name "h1" (first defined at line 4)`, 0},
		{"duplicate yaml key", "bad_duplicate_key.yaml", "", 3, "duration", "duplicate field (first at line 1)", 0},
		{"flow to a switch", "bad_flow_to_switch.yaml", "", 13, "traffic.flows[0].dst", "s1 is a switch, not a host", 0},
		// One error: the event names a flow the file defines, refused.
		{"flow to itself, named by an event", "bad_flow_self_event.yaml", "", 9, "traffic.flows[0].dst", "flow from h1 to itself", 0},
		// The IPv6 pair h1-h3 is fine.
		{"flow between IPv4 and IPv6 hosts", "bad_mixed_family.yaml", "", 13, "traffic.flows[1].name", "flow f from h1 (fd00::1) to h2 (10.0.0.1) mixes IPv4 and IPv6", 0},
		{"flow stops before it starts", "bad_flow_stop.yaml", "", 9, "traffic.flows[0].stop", "must be after start", 0},
		{"duplicate flow", "bad_duplicate_flow.yaml", "", 10, "traffic.flows[1].name", `duplicate flow name "f" (first at line 9)`, 0},
		{"queue pair clash", "bad_qp_clash.yaml", "", 10, "traffic.flows[1].src_qp", "queue pair 100 on h1 is already used by flow f", 0},
		{"reserved queue pair", "bad_qp_reserved.yaml", "", 9, "traffic.flows[0].dst_qp", "queue pair 1 is reserved", 0},
		{"unreachable destination", "bad_no_path.yaml", "", 10, "traffic.flows[0].name", "no path from h1 to h3", 0},
		{"explicit route without a link", "bad_route_path.yaml", "", 13, "topology.routes[0].path", "no link between h1 and s2", 0},
		{"routes that disagree at a switch", "bad_route_clash.yaml", "", 16, "topology.routes[1].path", "s1 forwards towards h3 by destination only", 0},
		{"incast receiver among senders", "bad_incast_receiver_sender.yaml", "", 13, "traffic.incasts[0].senders[2]", "h3 is also the receiver", 0},
		{"inline CDF not monotonic", "bad_cdf_not_monotonic.yaml", "", 16, "traffic.generated[0].cdf[2]", "CDF not monotonic", 0},
		{"CDF file not monotonic", "bad_cdf_file.yaml", "cdf_bad.txt", 4, "traffic.generated[0].cdf_file", "CDF not monotonic", 0},
		{"load above one", "bad_load.yaml", "", 9, "traffic.generated[0].load", "1.5 is out of range (0, 1]", 2},
		{"unknown mechanism", "bad_mechanism_kind.yaml", "", 8, "mechanism.kind", `unknown mechanism "hpcc"`, 0},
		{"long-haul-cnp param not a number", "bad_lhcnp_param.yaml", "", 14, "mechanism.params.alpha", `want a number, got "fast"`, 0},
		{"trigger persistence not a duration", "bad_lhcnp_persistence.yaml", "", 14, "mechanism.params.trigger_persistence", `unknown duration unit "Gbps"`, 0},
		{"congestion-aware host", "bad_mechanism_node_host.yaml", "", 11, "mechanism.nodes[1]", "h2 is a host, not a switch", 0},
		{"k_min above k_max", "bad_kmin_kmax.yaml", "", 4, "queue.ecn.k_min", "must be less than k_max", 0},
		{"event on undefined link", "bad_event_target.yaml", "", 8, "events[0].target", `undefined link "h2-h1" (did you mean "h1-h2"?)`, 0},
		{"unknown event kind", "bad_event_kind.yaml", "", 9, "events[0].kind", `unknown event kind "link-down"`, 0},
		{"event after the end", "bad_event_late.yaml", "", 10, "events[0].at", "after the end of the run", 0},
		{"event value of the wrong unit", "bad_event_value.yaml", "", 8, "events[0].value", `unknown duration unit "Gbps"`, 0},
		{"yaml syntax", "bad_syntax.yaml", "", 4, "", "did not find expected", 0},
		{"two notification mechanisms on one node", "bad_coexist.yaml", "", 18, "mechanism.with[1].nodes[0]", "s2 already runs long-haul-cnp (mechanism.nodes[1]); long-haul-cnp and fast-cnp cannot both run on one node", 0},
		{"fast-cnp param", "bad_fastcnp_param.yaml", "", 15, "mechanism.params.capable_senders", `unknown value "some" (want all or none)`, 0},
		{"fcn ingress outside the block", "bad_fcn_ingress.yaml", "", 16, "mechanism.params.ingress[0]", "pe2 is not one of the block's nodes (pe1, t1)", 0},
		{"with a non-node mechanism", "bad_with_dcqcn.yaml", "", 14, "mechanism.with[0].kind", "dcqcn is not a node mechanism", 0},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			_, err := LoadFile(path)
			if err == nil {
				t.Fatalf("LoadFile(%s) succeeded, want an error", path)
			}
			errs := Errors(err)
			if len(errs) == 0 {
				t.Fatalf("LoadFile(%s) error %v holds no *Error", path, err)
			}
			wantCount := max(tt.wantCount, 1)
			if len(errs) != wantCount {
				t.Errorf("got %d errors, want %d:\n%v", len(errs), wantCount, err)
			}
			wantFile := path
			if tt.wantFile != "" {
				wantFile = filepath.Join("testdata", tt.wantFile)
			}
			e := errs[0]
			got := struct {
				File  string
				Line  int
				Field string
			}{e.File, e.Line, e.Field}
			want := got
			want.File, want.Line, want.Field = wantFile, tt.wantLine, tt.wantField
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("first error (-want, +got):\n%s\nfull error: %v", diff, err)
			}
			if !strings.Contains(e.Reason, tt.wantReason) {
				t.Errorf("reason %q does not contain %q", e.Reason, tt.wantReason)
			}
			prefix := wantFile + ":"
			if !strings.HasPrefix(e.Error(), prefix) || (tt.wantField != "" && !strings.Contains(e.Error(), ": "+tt.wantField+": ")) {
				t.Errorf("error text %q is not file:line:col: field: reason", e.Error())
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{File: "s.yaml", Line: 3, Col: 7, Field: "topology.links[0].rate", Reason: "bad"}
	if got, want := e.Error(), "s.yaml:3:7: topology.links[0].rate: bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	_, err := Parse("x.yaml", []byte("duration: -1ms\nsample_interval: 1us\ntopology: {hosts: [{name: a}], links: []}\n"))
	if !errors.Is(err, ErrNegative) {
		t.Errorf("errors.Is(%v, ErrNegative) = false", err)
	}
}

func TestParseOddInputs(t *testing.T) {
	for _, tt := range []struct {
		desc, in, want string
	}{
		{"empty", "", "x.yaml: empty scenario"},
		{"comment only", "# nothing\n", "x.yaml: empty scenario"},
		{"not a mapping", "- a\n- b\n", "x.yaml:1:1: want a mapping, got a list"},
		{"two documents", "duration: 1ms\n---\nseed: 2\n", "x.yaml:2:1: more than one yaml document"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.in))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v, want prefix %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestSeedOverride(t *testing.T) {
	a, err := LoadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadFile("testdata/good.yaml", WithSeed(99))
	if err != nil {
		t.Fatal(err)
	}
	if b.Seed != 99 || a.Seed != 3 {
		t.Errorf("seeds %d, %d", a.Seed, b.Seed)
	}
}

// In a network whose hosts are given IPv6 addresses, the nodes without an
// ip take IPv6 ones too, from fd00::1 (free ones, in file order): a
// switch of 10.0.0.x sent no Long-haul CNP or Fast CNP to its hosts, and
// a host of 10.0.0.x could not reach the others. One IPv4 host keeps the
// IPv4 default.
func TestAutomaticAddressFamily(t *testing.T) {
	for _, tt := range []struct {
		desc, h1 string
		want     []string // h1, h2, h3, s1, s2
	}{
		{"IPv6 hosts", `"fd00::1"`, []string{"fd00::1", "fd00::2", "fd00::3", "fd00::4", "fd00:1::1"}},
		{"an IPv4 host", "10.0.0.9", []string{"10.0.0.9", "fd00::2", "10.0.0.1", "10.0.0.2", "fd00:1::1"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sc, err := Parse("v6.yaml", []byte(`duration: 1ms
sample_interval: 100us
topology:
  hosts: [{name: h1, ip: `+tt.h1+`}, {name: h2, ip: "fd00::2"}, {name: h3}]
  switches: [{name: s1}, {name: s2, ip: "fd00:1::1"}]
  links:
    - {a: h1, b: s1, rate: 10G, delay: 1us}
    - {a: h2, b: s1, rate: 10G, delay: 1us}
    - {a: s1, b: s2, rate: 10G, delay: 1us}
    - {a: s2, b: h3, rate: 10G, delay: 1us}
`))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range sc.Hosts {
				got = append(got, h.IP.String())
			}
			for _, s := range sc.Switches {
				got = append(got, s.IP.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("addresses of h1, h2, h3, s1, s2 (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestGood(t *testing.T) {
	sc, err := LoadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "good" || sc.Seed != 3 || sc.Duration != 10*time.Millisecond || sc.SampleInterval != 10*time.Microsecond {
		t.Errorf("header = %q %d %v %v", sc.Name, sc.Seed, sc.Duration, sc.SampleInterval)
	}
	if got := sc.Hosts[2].IP.String(); got != "10.0.0.1" {
		t.Errorf("h3 ip = %s", got)
	}
	// h1 was declared first without an address; 10.0.0.1 is taken by h3.
	if got := sc.Hosts[0].IP.String(); got != "10.0.0.2" {
		t.Errorf("h1 auto ip = %s, want 10.0.0.2", got)
	}
	wantS2 := Queue{ECN: ECN{Enabled: true, KMin: 10 * KB, KMax: 20 * KB, PMax: 0.01}, PFC: PFC{Enabled: true, XOff: 100 * KiB, XOn: 50 * KiB}}
	if diff := cmp.Diff(wantS2, sc.Switches[1].Queue); diff != "" {
		t.Errorf("s2 queue (-want, +got):\n%s", diff)
	}
	if !sc.Switches[0].CongestionAware || sc.Switches[1].CongestionAware {
		t.Errorf("congestion-aware = %v, %v; want true, false", sc.Switches[0].CongestionAware, sc.Switches[1].CongestionAware)
	}
	wantFC := DefaultFastCNP()
	wantFC.KMax, wantFC.CNPInterval, wantFC.CapableSenders = 50*KB, 2*time.Microsecond, "none"
	if diff := cmp.Diff(wantFC, sc.Mechanism.FastCNP()); diff != "" {
		t.Errorf("fast-cnp params (-want, +got):\n%s", diff)
	}
	lk, ok := sc.Link("core")
	if !ok || lk.Rate != 100*Gbps || lk.Delay != 2500*time.Nanosecond || lk.Buffer != 4*MB {
		t.Errorf("core = %+v", lk)
	}
	if lk, _ := sc.Link("h1-s1"); lk.Rate != 25*Gbps || lk.Buffer != MiB {
		t.Errorf("h1-s1 = %+v", lk)
	}
	if d := sc.DCQCN; *d.RateAI != 5*Mbps || *d.G != 1000 || *d.CNPInterval != 4*time.Microsecond || d.RateHAI != nil || *sc.NIC.MTU != 1024 {
		t.Errorf("dcqcn = %+v, nic = %+v", sc.DCQCN, sc.NIC)
	}
	long, _ := sc.Flow("long")
	if long.SrcQP != 7 || !long.LongLived() {
		t.Errorf("long = %+v", long)
	}
	if p, _ := sc.Route("h1", "h3"); !cmp.Equal(p, []string{"h1", "s1", "s2", "h3"}) {
		t.Errorf("route h1->h3 = %v", p)
	}
	if p, _ := sc.Route("h3", "h1"); !cmp.Equal(p, []string{"h3", "s2", "s1", "h1"}) {
		t.Errorf("route h3->h1 = %v", p)
	}
	// Flows sorted by start; events by time.
	for i := 1; i < len(sc.Flows); i++ {
		if sc.Flows[i].Start < sc.Flows[i-1].Start {
			t.Fatalf("flows not sorted at %d", i)
		}
	}
	var kinds []EventKind
	for _, e := range sc.Events {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]EventKind{EventRTT, EventLinkRate, EventLinkDelay, EventFlowStop, EventFlowStart}, kinds); diff != "" {
		t.Errorf("event order (-want, +got):\n%s", diff)
	}
	// Queue pairs are unique per host.
	used := map[string]map[uint32]bool{}
	for _, f := range sc.Flows {
		for _, s := range []struct {
			h  string
			qp uint32
		}{{f.Src, f.SrcQP}, {f.Dst, f.DstQP}} {
			if used[s.h] == nil {
				used[s.h] = map[uint32]bool{}
			}
			if used[s.h][s.qp] || s.qp <= 1 {
				t.Fatalf("qp %d on %s reused or reserved (flow %s)", s.qp, s.h, f.Name)
			}
			used[s.h][s.qp] = true
		}
	}
	var burst, mix int
	for _, f := range sc.Flows {
		switch f.Group {
		case "burst":
			burst++
		case "mix":
			mix++
			if f.Start < time.Millisecond || f.Start >= 3*time.Millisecond || f.Size < 1000 || f.Size > 100000 || f.Src == f.Dst {
				t.Errorf("generated flow out of bounds: %+v", f)
			}
		}
	}
	if burst != 2 || mix == 0 {
		t.Errorf("burst=%d mix=%d", burst, mix)
	}
}

// Generated traffic depends on the seed alone.
func TestGeneratedDeterministic(t *testing.T) {
	a, err := LoadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LoadFile("testdata/good.yaml")
	if diff := cmp.Diff(a.Flows, b.Flows); diff != "" {
		t.Errorf("two loads differ (-a, +b):\n%s", diff)
	}
}

// The offered load of generated traffic matches the requested fraction.
func TestGeneratedLoad(t *testing.T) {
	cdf := &CDF{Size: []float64{0, 10000, 20000, 30000, 50000, 80000, 200000, 1e6, 2e6, 5e6, 1e7, 3e7},
		P: []float64{0, .15, .2, .3, .4, .53, .6, .7, .8, .9, .97, 1}}
	const rate = 100 * Gbps
	span := 2 * time.Second
	flows := generate(genParams{group: "g", senders: []string{"a", "b"}, receivers: []string{"a", "b"},
		load: 0.4, cdf: cdf, seed: 5, stop: span, limit: 1 << 30, rate: func(string) Rate { return rate }})
	var bytes float64
	for _, f := range flows {
		bytes += float64(f.Size)
	}
	got := bytes * 8 / span.Seconds() / 2 / float64(rate)
	if got < 0.34 || got > 0.46 {
		t.Errorf("offered load = %.3f over %d flows, want 0.4 +- 15%%", got, len(flows))
	}
}

func TestSection7(t *testing.T) {
	sc, err := LoadFile("../../scenarios/section7.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Mechanism.LongHaulCNP()
	if sc.Mechanism.Kind != MechanismLongHaulCNP || p.KBase != 64*KB || p.Alpha != 1.0 || p.RTTEst != 0 {
		t.Errorf("mechanism = %+v", sc.Mechanism)
	}
	// The stated deviation and the recovery step as written (b/s per tick).
	if p.TriggerPersistence != 100*time.Microsecond || !p.UpstreamFirst || p.RecoveryStep != 250*Mbps {
		t.Errorf("trigger_persistence %v, upstream_first %v, recovery_step %v", p.TriggerPersistence, p.UpstreamFirst, p.RecoveryStep)
	}
	// The defaults are the draft's: no persistence, upstream priority.
	if d := DefaultLongHaulCNP(); d.TriggerPersistence != 0 || !d.UpstreamFirst || d.KBase != 64_000 {
		t.Errorf("defaults %+v", d)
	}
	wan, _ := sc.Link("wan")
	// RTT_est derived from the WAN link: 2 * 5 ms. K_max = max(K_base,
	// alpha * R * RTT / 8) = 125 MB, K_min = 62.5 MB.
	rtt := 2 * wan.Delay
	if rtt != 10*time.Millisecond {
		t.Errorf("WAN RTT = %v, want 10ms", rtt)
	}
	kmax := max(float64(p.KBase), p.Alpha*float64(wan.Rate)*rtt.Seconds()/8)
	if kmax != 125e6 || kmax*p.KMinFraction != 62.5e6 {
		t.Errorf("K_max = %v, K_min = %v", kmax, kmax*p.KMinFraction)
	}
	main, _ := sc.Flow("main")
	if main.SrcQP != 100 || main.DstQP != 200 || sc.Hosts[0].IP.String() != "10.0.0.1" || sc.Hosts[1].IP.String() != "10.0.0.4" {
		t.Errorf("main = %+v, hosts = %+v", main, sc.Hosts[:2])
	}
}

func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("scenarios: %v %v", files, err)
	}
	cmp, err := filepath.Glob("../../scenarios/compare/*.yaml")
	if err != nil || len(cmp) < 8 {
		t.Fatalf("scenarios/compare: %v %v", cmp, err)
	}
	checks, err := filepath.Glob("../../scenarios/checks/*.yaml")
	if err != nil || len(checks) < 1 {
		t.Fatalf("scenarios/checks: %v %v", checks, err)
	}
	dev, err := filepath.Glob("../../scenarios/dev/*.yaml")
	if err != nil || len(dev) < 2 {
		t.Fatalf("scenarios/dev: %v %v", dev, err)
	}
	files = append(append(append(files, cmp...), checks...), dev...)
	for _, f := range files {
		if _, err := LoadFile(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}
