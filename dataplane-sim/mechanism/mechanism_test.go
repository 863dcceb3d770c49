package mechanism

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// The batch runner sums the functions' counters over the switches; a
// max_ counter keeps the largest.
func TestAddCounters(t *testing.T) {
	tests := []struct {
		desc       string
		into, from map[string]int64
		want       map[string]int64
	}{
		{desc: "into nothing", into: map[string]int64{}, from: map[string]int64{"sent": 2, "max_delay_ns": 5},
			want: map[string]int64{"sent": 2, "max_delay_ns": 5}},
		{desc: "sums and the largest", into: map[string]int64{"sent": 3, "max_delay_ns": 7}, from: map[string]int64{"sent": 2, "max_delay_ns": 5},
			want: map[string]int64{"sent": 5, "max_delay_ns": 7}},
		{desc: "a zero counter is there", into: map[string]int64{}, from: map[string]int64{"dropped": 0},
			want: map[string]int64{"dropped": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			AddCounters(tt.into, tt.from)
			if diff := cmp.Diff(tt.want, tt.into); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
		})
	}
}

type testConfig struct{ N int }

func (c *testConfig) Validate() error {
	if c.N < 0 {
		return errNegative
	}
	return nil
}

var errNegative = errors.New("n must not be negative")

func TestValidate(t *testing.T) {
	tests := []struct {
		desc    string
		cfg     any
		wantErr string
	}{
		{desc: "valid", cfg: testConfig{N: 1}},
		{desc: "invalid", cfg: testConfig{N: -1}, wantErr: "test: switch s1: n must not be negative"},
		{desc: "another mechanism's type", cfg: 3, wantErr: "test: switch s1: configuration of type int, want mechanism.testConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			err := Validate[testConfig](tt.cfg, "test: switch s1")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestDetectionConfig: the node under a mechanism's mode notifies within
// the mechanism's limits, re-evaluates a queue once per per-flow interval,
// never pauses, resumes or collaborates.
func TestDetectionConfig(t *testing.T) {
	l := Limits{MinCNPInterval: 50 * engine.Microsecond, PortCNPRatePerSec: 1000, PortCNPBurst: 10, MaxFlowsPerTrigger: 3}
	lc := DetectionConfig(true, 46, 6, l)
	ic, q := lc.Interface, lc.Interface.Queue
	for _, tt := range []struct {
		desc      string
		got, want any
	}{
		{"enabled", lc.Enabled, true},
		{"dscp, prio", [2]uint8{lc.CNPDSCP, lc.CNPPrio}, [2]uint8{46, 6}},
		{"collaboration", [2]bool{lc.Collaborative.Enabled, lc.Collaborative.UpstreamFirst}, [2]bool{}},
		{"port bucket", [2]int64{ic.CNPRatePerSec, ic.CNPBurst}, [2]int64{1000, 10}},
		{"per-flow interval, measurement, EMR window", [3]engine.Time{q.MinCNPInterval, q.MeasurementInterval, q.EMRWindow},
			[3]engine.Time{l.MinCNPInterval, l.MinCNPInterval, l.MinCNPInterval}},
		{"pause level", q.Action.PauseLevel, lhcnp.PauseLevelNever},
		{"resume", q.Action.ResumeEnabled, false},
		{"flows per trigger", q.Action.MaxFlowsPerTrigger, 3},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.desc, tt.got, tt.want)
		}
	}
}

// judged is a SharedReceiver that makes the same of every packet and
// records what it handled.
type judged struct {
	name    string
	v       Verdict
	handled *[]string
}

func (j judged) Judge(*netsim.Host, *Message) Verdict { return j.v }

func (j judged) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	return j.HandleMessage(h, &Message{Packet: p})
}

func (j judged) HandleMessage(*netsim.Host, *Message) bool {
	if j.v == Pass {
		return false
	}
	*j.handled = append(*j.handled, j.name)
	return true
}

// other is a control handler of another kind (a reaction point).
type other struct{ handled *[]string }

func (o other) HandleControl(*netsim.Host, *netsim.Packet) bool {
	*o.handled = append(*o.handled, "other")
	return true
}

// hostOfOther returns a host whose control handler is an other, and
// what the handlers record.
func hostOfOther(t *testing.T) (*netsim.Host, *[]string) {
	t.Helper()
	net := netsim.New(engine.New())
	h, err := net.AddHost("h", netip.MustParseAddr("10.0.0.1"), netsim.DefaultHostConfig())
	if err != nil {
		t.Fatal(err)
	}
	handled := new([]string)
	h.SetControlHandler(other{handled})
	return h, handled
}

// TestShareControl: the receivers of one mechanism on a host, one per
// switch, in the order their switches' functions were created, another
// handler chained between them: a message goes to the first that acts on
// it; one none acts on is handled (counted, dropped) by the first that
// refused it while on, else the first that refused it off; one none
// recognises goes on to the handler behind. A set of one is the receiver
// alone.
func TestShareControl(t *testing.T) {
	tests := []struct {
		desc     string
		verdicts []Verdict
		want     []string
	}{
		{desc: "alone, acting", verdicts: []Verdict{Act}, want: []string{"r0"}},
		{desc: "alone, refusing", verdicts: []Verdict{RefuseOff}, want: []string{"r0"}},
		{desc: "the last acts", verdicts: []Verdict{Refuse, RefuseOff, Act}, want: []string{"r2"}},
		{desc: "the first acts", verdicts: []Verdict{Act, Refuse, Act}, want: []string{"r0"}},
		{desc: "none acts: the first on counts", verdicts: []Verdict{RefuseOff, Pass, Refuse, Refuse}, want: []string{"r2"}},
		{desc: "none acts, none on: the first counts", verdicts: []Verdict{Pass, RefuseOff, RefuseOff}, want: []string{"r1"}},
		{desc: "none recognises it: the handler behind", verdicts: []Verdict{Pass, Pass}, want: []string{"other"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			h, handled := hostOfOther(t)
			for i, v := range tt.verdicts {
				ShareControl(h, judged{fmt.Sprintf("r%d", i), v, handled})
				if i == 0 {
					ChainControl(h, judged{"another mechanism's", Pass, handled})
				}
			}
			if !h.ControlHandler().HandleControl(h, nil) {
				t.Errorf("not handled")
			}
			if diff := cmp.Diff(tt.want, *handled); diff != "" {
				t.Errorf("handled by (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnshareControl: a receiver taken off its host again gets no more
// messages while the others of its set still do; with the last the set
// goes, the host's chain as it was without it (another mechanism's
// handler chained after the set's first receiver kept, in front of the
// handler the host had).
func TestUnshareControl(t *testing.T) {
	h, hp := hostOfOther(t)
	r0, r1, mid := judged{"r0", Act, hp}, judged{"r1", Act, hp}, judged{"another mechanism's", Pass, hp}
	ShareControl(h, r0)
	ChainControl(h, mid)
	ShareControl(h, r1)
	if left := UnshareControl(h, r0); !slices.Equal(left, []judged{r1}) {
		t.Errorf("left after r0: %v, want r1", left)
	}
	h.ControlHandler().HandleControl(h, nil)
	if diff := cmp.Diff([]string{"r1"}, *hp); diff != "" {
		t.Errorf("handled by (-want +got):\n%s", diff)
	}
	if left := UnshareControl(h, r1); len(left) != 0 {
		t.Errorf("left after r1: %v, want none", left)
	}
	if want := netsim.ControlHandler(firstOf{mid, other{hp}}); h.ControlHandler() != want {
		t.Errorf("chain %#v after the last receiver went, want %#v", h.ControlHandler(), want)
	}
}

// reader is a SharedReceiver that reads every message with its decoder
// and records the frame it read, judging and acting.
type reader struct {
	dec    wire.Decoder
	v      Verdict
	frames *[]*wire.Frame
}

func (r reader) Judge(_ *netsim.Host, m *Message) Verdict {
	f, _ := m.Decode(r.dec)
	*r.frames = append(*r.frames, f)
	return r.v
}

func (r reader) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	return r.HandleMessage(h, &Message{Packet: p})
}

func (r reader) HandleMessage(_ *netsim.Host, m *Message) bool {
	f, _ := m.Decode(r.dec)
	*r.frames = append(*r.frames, f)
	return true
}

// TestShareControlDecodesOnce: the receivers on a host judge a message
// from one decoding per decoder, and the one that acts reads that
// decoding: receivers with the same code points read one frame, one with
// other code points its own. The next message reuses the frames and
// allocates nothing.
func TestShareControlDecodesOnce(t *testing.T) {
	net := netsim.New(engine.New())
	h, err := net.AddHost("h", netip.MustParseAddr("10.0.0.1"), netsim.DefaultHostConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := net.NewPacket()
	if err := net.SetFrame(p, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	other := wire.Decoder{CodePoints: wire.DefaultCodePoints()}
	other.CodePoints.FastCNPOptType++
	var frames []*wire.Frame
	for _, r := range []reader{{wire.Decoder{}, Refuse, &frames}, {other, Refuse, &frames}, {wire.Decoder{}, Act, &frames}} {
		ShareControl(h, r)
	}
	c := h.ControlHandler()
	if !c.HandleControl(h, p) {
		t.Fatal("not handled")
	}
	// r0 judges, r1 judges, r2 judges and acts.
	if len(frames) != 4 {
		t.Fatalf("%d frames read, want 4", len(frames))
	}
	if f := frames[0]; frames[1] == f || frames[2] != f || frames[3] != f {
		t.Errorf("frames read %v, want the first decoder's %p but for the second decoder's", frames, f)
	}
	if allocs := testing.AllocsPerRun(10, func() { frames = frames[:0]; c.HandleControl(h, p) }); allocs != 0 {
		t.Errorf("%v allocations a message, want none", allocs)
	}
}

// recorder records the port events it is given.
type recorder struct {
	name   string
	events *[]string
}

func (r recorder) OnEnqueue(*netsim.Port, *netsim.Packet, int64) {
	*r.events = append(*r.events, r.name+" enqueue")
}
func (r recorder) OnDequeue(*netsim.Port, *netsim.Packet, int64) {
	*r.events = append(*r.events, r.name+" dequeue")
}
func (r recorder) OnMark(*netsim.Port, *netsim.Packet, int64) {
	*r.events = append(*r.events, r.name+" mark")
}
func (r recorder) OnDrop(*netsim.Port, *netsim.Packet, int64) {
	*r.events = append(*r.events, r.name+" drop")
}

// TestBesideSeveral: every function put beside the mode at once sees the
// enqueues, in order, after the mode, which alone sees the rest; a later
// call replaces them (the mode's functions are set again after each
// change of mode), and one with none leaves the mode alone. The old
// Beside took one function: a second replaced the first.
func TestBesideSeveral(t *testing.T) {
	net := netsim.New(engine.New())
	sw, err := net.AddSwitch("sw", netip.MustParseAddr("10.0.0.254"), netsim.SwitchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := net.AddHost("h", netip.MustParseAddr("10.0.0.1"), netsim.DefaultHostConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := net.Connect(h, sw, netsim.LinkConfig{RateBitsPerSec: 10e9, Delay: engine.Microsecond}); err != nil {
		t.Fatal(err)
	}
	var events []string
	base, a, b := recorder{"base", &events}, recorder{"a", &events}, recorder{"b", &events}
	sw.SetObserver(base)
	pt := sw.Ports()[0]
	observe := func() []string {
		events = nil
		o := pt.Observer()
		o.OnEnqueue(pt, nil, 0)
		o.OnDequeue(pt, nil, 0)
		o.OnMark(pt, nil, 0)
		o.OnDrop(pt, nil, 0)
		return events
	}
	for _, tt := range []struct {
		desc   string
		beside []netsim.PortObserver
		want   []string
	}{
		{desc: "two", beside: []netsim.PortObserver{a, b}, want: []string{"base enqueue", "a enqueue", "b enqueue", "base dequeue", "base mark", "base drop"}},
		{desc: "one replaces them", beside: []netsim.PortObserver{b}, want: []string{"base enqueue", "b enqueue", "base dequeue", "base mark", "base drop"}},
		{desc: "none", want: []string{"base enqueue", "base dequeue", "base mark", "base drop"}},
	} {
		Beside(sw, tt.beside...)
		if diff := cmp.Diff(tt.want, observe()); diff != "" {
			t.Errorf("%s beside (-want +got):\n%s", tt.desc, diff)
		}
	}
}

// TestAccessList: a host prefix of each valid address, in order; an unset
// one left out.
func TestAccessList(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		addrs []netip.Addr
		want  []netip.Prefix
	}{
		{desc: "none"},
		{desc: "unset", addrs: []netip.Addr{{}}},
		{desc: "both families", addrs: []netip.Addr{netip.MustParseAddr("10.0.0.1"), {}, netip.MustParseAddr("2001:db8::1")},
			want: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("2001:db8::1/128")}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := AccessList(tt.addrs...)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("AccessList(%v) (-want, +got):\n%s", tt.addrs, diff)
			}
		})
	}
}
