package lhcnp

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// deliver sends p from sw towards its destination and runs the network
// until it has arrived.
func deliver(t *testing.T, l *line, sw *netsim.Switch, p *netsim.Packet) {
	t.Helper()
	if !sw.Send(p) {
		t.Fatal("no route")
	}
	l.sim.Run(l.sim.Now() + 50*engine.Microsecond)
}

// TestReactionActions sends crafted Long-haul CNPs to a source whose QP
// runs at 10 Gb/s and checks each action of §5.6 and the checks before it.
func TestReactionActions(t *testing.T) {
	rr := func(p uint16) wire.LongHaul {
		return wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: p, SourceQP: 100}
	}
	resume := func(p uint16) wire.LongHaul {
		return wire.LongHaul{CongLevel: 20, Action: wire.ActionResume, Parameter: p, SourceQP: 100}
	}
	type msg struct {
		m      wire.LongHaul
		rogue  bool
		format Format
		destQP uint32 // the RoCEv2 BTH's destination QP when not the body's Source QP
	}
	for _, tt := range []struct {
		desc      string
		v6        bool
		rc        func(c *ReactionConfig)
		msgs      []msg
		wantRate  int64
		wantPause bool
		wantCNPs  int64 // DCQCN CNPs processed by the QP
		check     func(c ReactionCounters) bool
	}{
		{desc: "rate reduce 30", msgs: []msg{{m: rr(30)}}, wantRate: 7e9,
			check: func(c ReactionCounters) bool { return c.AcceptedRateReduce == 1 }},
		{desc: "resume 50 restores half the last reduction", msgs: []msg{{m: rr(30)}, {m: resume(50)}}, wantRate: 8.5e9,
			check: func(c ReactionCounters) bool { return c.AcceptedResume == 1 && c.ResumeCapped == 0 }},
		// §5.5.1: Parameter 0 is "unconditional resume to the original
		// rate", past the §9 cap by default...
		{desc: "resume 0 restores all, uncapped", msgs: []msg{{m: rr(80)}, {m: resume(0)}}, wantRate: 10e9,
			check: func(c ReactionCounters) bool { return c.AcceptedResume == 1 && c.ResumeCapped == 0 }},
		// ... and capped like any Resume with CapUnconditionalResume.
		{desc: "resume 0 capped when configured", rc: func(c *ReactionConfig) { c.CapUnconditionalResume = true },
			msgs: []msg{{m: rr(80)}, {m: resume(0)}}, wantRate: 7e9,
			check: func(c ReactionCounters) bool { return c.ResumeCapped == 1 }},
		// §9: a percentage Resume is capped at MaxResumeIncreasePercent
		// (50%) of the normal rate: 100% of an 80% cut restores 50%.
		{desc: "resume 100 capped", msgs: []msg{{m: rr(80)}, {m: resume(100)}}, wantRate: 7e9,
			check: func(c ReactionCounters) bool { return c.ResumeCapped == 1 }},
		// MaxResumeIncreasePercent 100 (a deviation: 100% of the normal
		// rate is no cap) lets the same Resume restore the whole cut.
		{desc: "resume 100 restores all with a cap of 100", rc: func(c *ReactionConfig) { c.MaxResumeIncreasePercent = 100 },
			msgs: []msg{{m: rr(80)}, {m: resume(100)}}, wantRate: 10e9,
			check: func(c ReactionCounters) bool { return c.AcceptedResume == 1 && c.ResumeCapped == 0 }},
		{desc: "pause", msgs: []msg{{m: wire.LongHaul{CongLevel: 230, Action: wire.ActionPause, Parameter: 5000, SourceQP: 100}}},
			wantRate: 10e9, wantPause: true, check: func(c ReactionCounters) bool { return c.AcceptedPause == 1 }},
		{desc: "notify is the dcqcn response", msgs: []msg{{m: wire.LongHaul{CongLevel: 100, SourceQP: 100}}},
			wantRate: -1, wantCNPs: 1, check: func(c ReactionCounters) bool { return c.AcceptedNotify == 1 }},
		{desc: "icmpv6 format", v6: true, msgs: []msg{{m: rr(30), format: FormatICMPv6}}, wantRate: 7e9,
			check: func(c ReactionCounters) bool { return c.AcceptedRateReduce == 1 }},
		{desc: "forged from an untrusted node changes nothing", msgs: []msg{{m: rr(30), rogue: true},
			{m: wire.LongHaul{CongLevel: 230, Action: wire.ActionPause, Parameter: 5000, SourceQP: 100}, rogue: true}},
			wantRate: 10e9, check: func(c ReactionCounters) bool { return c.Untrusted == 2 && c.AcceptedRateReduce == 0 }},
		{desc: "forged resume changes nothing", msgs: []msg{{m: rr(50)}, {m: resume(0), rogue: true}}, wantRate: 5e9,
			check: func(c ReactionCounters) bool { return c.Untrusted == 1 && c.AcceptedResume == 0 }},
		{desc: "inactive qp", msgs: []msg{{m: wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 999}}},
			wantRate: 10e9, check: func(c ReactionCounters) bool { return c.InactiveQP == 1 }},
		{desc: "inconsistent: rate reduce at level 0", msgs: []msg{{m: wire.LongHaul{Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}}},
			wantRate: 10e9, check: func(c ReactionCounters) bool { return c.Inconsistent == 1 }},
		{desc: "inconsistent: ecn marking rate of 150%", msgs: []msg{{m: wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30,
			SourceQP: 100, MetricType: wire.MetricECNMarkingRate, MetricValue: 150}}},
			wantRate: 10e9, check: func(c ReactionCounters) bool { return c.Inconsistent == 1 }},
		// §6.2.3: the BTH's Destination QP is the Source QP of the body;
		// a frame where they differ is not one a node built.
		{desc: "inconsistent: rocev2 destination qp not the source qp", msgs: []msg{{m: rr(30), destQP: 101}},
			wantRate: 10e9, check: func(c ReactionCounters) bool { return c.Inconsistent == 1 && c.AcceptedRateReduce == 0 }},
		// §6.1: "When Metric Type is 0, receivers SHOULD treat the
		// Congestion Metric Value as opaque context": any value passes.
		{desc: "metric type 0 is opaque", msgs: []msg{{m: wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30,
			SourceQP: 100, MetricType: wire.MetricUnspecified, MetricValue: wire.MaxMetricValue}}},
			wantRate: 7e9, check: func(c ReactionCounters) bool { return c.AcceptedRateReduce == 1 && c.Inconsistent == 0 }},
		{desc: "legacy: rocev2 is a standard cnp", rc: func(c *ReactionConfig) { c.Legacy = true }, msgs: []msg{{m: rr(30)}},
			wantRate: -1, wantCNPs: 1, check: func(c ReactionCounters) bool { return c.LegacyAsCNP == 1 && c.AcceptedRateReduce == 0 }},
		{desc: "legacy: icmpv6 silently dropped", v6: true, rc: func(c *ReactionConfig) { c.Legacy = true },
			msgs: []msg{{m: rr(30), format: FormatICMPv6}}, wantRate: 10e9,
			check: func(c ReactionCounters) bool { return c.LegacyICMPv6Dropped == 1 }},
		// A configuration without code points is the defaults' (the
		// decoder's rule), the legacy ICMPv6 check's too.
		{desc: "legacy: icmpv6 silently dropped, zero code points", v6: true,
			rc:   func(c *ReactionConfig) { c.Legacy, c.CodePoints = true, wire.CodePoints{} },
			msgs: []msg{{m: rr(30), format: FormatICMPv6}}, wantRate: 10e9,
			check: func(c ReactionCounters) bool { return c.LegacyICMPv6Dropped == 1 }},
		{desc: "legacy strict length rejects rocev2", rc: func(c *ReactionConfig) { c.Legacy, c.LegacyStrictLength = true, true },
			msgs: []msg{{m: rr(30)}}, wantRate: 10e9,
			check: func(c ReactionCounters) bool { return c.LegacyRejected == 1 }},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			rc := DefaultReactionConfig()
			rc.TrustedSources = trusted(tt.v6)
			rc.RTTEst = 100 * engine.Millisecond // no recovery during the test
			if tt.rc != nil {
				tt.rc(&rc)
			}
			l := newLine(t, lineOpts{v6: tt.v6, dcqcn: true, rogue: true, rc: rc})
			waitActive(t, l)
			q := l.flow.Sender
			for _, m := range tt.msgs {
				f := m.format
				if f == FormatNone {
					f = FormatRoCEv2
				}
				from := l.n1
				if m.rogue {
					from = l.rogue
				}
				qp := m.m.SourceQP
				if m.destQP != 0 {
					qp = m.destQP
				}
				deliver(t, l, from, craftDestQP(t, l.net, from, l.src, f, m.m, qp))
			}
			c := l.rp.Counters()
			if !tt.check(c) {
				t.Errorf("counters %+v", c)
			}
			if tt.wantRate >= 0 && q.RateBitsPerSec() != tt.wantRate {
				t.Errorf("rate %d, want %d", q.RateBitsPerSec(), tt.wantRate)
			}
			if paused := q.PausedUntil() > l.sim.Now(); paused != tt.wantPause {
				t.Errorf("paused until %v at %v, want paused %v", q.PausedUntil(), l.sim.Now(), tt.wantPause)
			}
			if q.CNPs() != tt.wantCNPs {
				t.Errorf("dcqcn cnps %d, want %d", q.CNPs(), tt.wantCNPs)
			}
		})
	}
}

// TestReactionMalformed flips a bit the ICRC covers: the packet is dropped
// and counted, the rate is unchanged.
func TestReactionMalformed(t *testing.T) {
	l := newLine(t, lineOpts{rogue: false})
	waitActive(t, l)
	p := craft(t, l.net, l.n1, l.src, FormatRoCEv2, wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100})
	// The Parameter, in the frame the reaction point decodes: Ethernet,
	// IPv4, UDP, BTH, then 2 bytes into the extension.
	p.Frame()[wire.EthernetLen+20+wire.UDPLen+wire.BTHLen+2] ^= 0xFF
	deliver(t, l, l.n1, p)
	if c := l.rp.Counters(); c.Malformed != 1 || c.AcceptedRateReduce != 0 {
		t.Errorf("counters %+v", c)
	}
	if r := l.flow.Sender.RateBitsPerSec(); r != 10e9 {
		t.Errorf("rate %d", r)
	}
}

// recoveryLine is a line whose source's reaction point trusts every node,
// with RTT_est rtt and DCQCN on, its flow active.
func recoveryLine(t *testing.T, rtt engine.Time) *line {
	t.Helper()
	rc := DefaultReactionConfig()
	rc.TrustedSources = trusted(false)
	rc.RTTEst = rtt
	l := newLine(t, lineOpts{dcqcn: true, rc: rc})
	waitActive(t, l)
	return l
}

// TestReactionRecovery checks the per-QP timer of §5.6: no increase before
// 2 x RTT_est without a notification, then additive steps back to the
// normal rate; a new notification restarts the timer; DCQCN's own
// increase does not undo the cut meanwhile (rate hold).
func TestReactionRecovery(t *testing.T) {
	const rtt = 2 * engine.Millisecond
	l := recoveryLine(t, rtt)
	q := l.flow.Sender
	send := func() {
		deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2,
			wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}))
	}
	send()
	t0 := l.sim.Now()
	if q.RateBitsPerSec() != 7e9 {
		t.Fatalf("rate %d after the cut", q.RateBitsPerSec())
	}
	// Half-way, a second notification restarts the timer.
	l.sim.Run(t0 + rtt)
	send()
	t1 := l.sim.Now()
	if q.RateBitsPerSec() != 4.9e9 {
		t.Fatalf("rate %d after the second cut", q.RateBitsPerSec())
	}
	l.sim.Run(t1 + 2*rtt - 100*engine.Microsecond)
	if q.RateBitsPerSec() != 4.9e9 || q.CeilingBitsPerSec() != 4.9e9 {
		t.Errorf("rate %d, ceiling %d before 2 x RTT_est without a notification: want 4.9 Gb/s held",
			q.RateBitsPerSec(), q.CeilingBitsPerSec())
	}
	l.sim.Run(t1 + 2*rtt + rtt/10 + engine.Microsecond)
	if got := q.RateBitsPerSec(); got <= 4.9e9 || got > 4.9e9+2*5e8 {
		t.Errorf("rate %d just after 2 x RTT_est: want one or two additive steps of 5%% of 10 Gb/s", got)
	}
	l.sim.Run(t1 + 2*rtt + 20*rtt/10)
	if got := q.RateBitsPerSec(); got != 10e9 {
		t.Errorf("rate %d after recovery, want 10 Gb/s", got)
	}
	r, _ := l.rp.QP(q)
	if r.Reduced || l.rp.Counters().Recoveries != 1 || q.CeilingBitsPerSec() != 0 || r.CeilingBitsPerSec != 0 {
		t.Errorf("reaction %+v, counters %+v", r, l.rp.Counters())
	}
}

// TestReactionRecoveryNotifyRestarts: §5.6's timer counts from the last
// Long-haul CNP of any action: a Notify after a Rate Reduce restarts it,
// so no additive recovery starts 2 · RTT_est after the cut, only 2 ·
// RTT_est after the Notify.
func TestReactionRecoveryNotifyRestarts(t *testing.T) {
	const rtt = 2 * engine.Millisecond
	l := recoveryLine(t, rtt)
	send := func(a wire.LongHaul) {
		deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2, a))
	}
	send(wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100})
	t0 := l.sim.Now()
	l.sim.Run(t0 + rtt)
	send(wire.LongHaul{CongLevel: 100, Action: wire.ActionNotify, SourceQP: 100})
	t1 := l.sim.Now()
	l.sim.Run(t0 + 2*rtt + rtt/2) // past the cut's timer, before the Notify's
	if n := l.rp.Counters().Recoveries; n != 0 {
		t.Errorf("%d recoveries %v after the cut, %v after a Notify: want none before 2 x RTT_est after the Notify", n, l.sim.Now()-t0, l.sim.Now()-t1)
	}
	l.sim.Run(t1 + 2*rtt + engine.Microsecond)
	if n := l.rp.Counters().Recoveries; n != 1 {
		t.Errorf("%d recoveries just after 2 x RTT_est after the Notify, want 1", n)
	}
}

// TestReactionRecoveryInterval: a configured RecoveryInterval (a
// deviation from §5.6's RECOMMENDED 2 · RTT_est, the scenario key
// recovery_interval) is when additive recovery starts after a cut, not 2 ·
// RTT_est (4 ms here): 1 ms and 6 ms against the default's 4 ms.
func TestReactionRecoveryInterval(t *testing.T) {
	const rtt = 2 * engine.Millisecond
	for _, tt := range []struct {
		desc      string
		interval  engine.Time // ReactionConfig.RecoveryInterval
		wantStart engine.Time // recovery's start after the cut
	}{
		{desc: "default 2 x RTT_est", wantStart: 2 * rtt},
		{desc: "configured 1 ms", interval: engine.Millisecond, wantStart: engine.Millisecond},
		{desc: "configured 6 ms", interval: 6 * engine.Millisecond, wantStart: 6 * engine.Millisecond},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			rc := DefaultReactionConfig()
			rc.TrustedSources = trusted(false)
			rc.RTTEst = rtt
			rc.RecoveryInterval = tt.interval
			l := newLine(t, lineOpts{dcqcn: true, rc: rc})
			waitActive(t, l)
			q := l.flow.Sender
			deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2,
				wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}))
			r, _ := l.rp.QP(q)
			t0 := r.LastCNP
			l.sim.Run(t0 + tt.wantStart - engine.Microsecond)
			if n, got := l.rp.Counters().Recoveries, q.RateBitsPerSec(); n != 0 || got != 7e9 {
				t.Errorf("%v after the cut: %d recoveries, rate %d; want none, 7 Gb/s held", l.sim.Now()-t0, n, got)
			}
			l.sim.Run(t0 + tt.wantStart + rtt/10 + engine.Microsecond)
			if n, got := l.rp.Counters().Recoveries, q.RateBitsPerSec(); n != 1 || got <= 7e9 {
				t.Errorf("%v after the cut: %d recoveries, rate %d; want recovery started, above 7 Gb/s", l.sim.Now()-t0, n, got)
			}
		})
	}
}

func TestReactionConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		field string
		edit  func(c *ReactionConfig)
	}{
		{"reaction.rtt-est", func(c *ReactionConfig) { c.RTTEst = 0 }},
		{"reaction.max-resume-increase-percent", func(c *ReactionConfig) { c.MaxResumeIncreasePercent = 0 }},
		{"reaction.recovery-step-percent", func(c *ReactionConfig) { c.RecoveryStepPercent = 101 }},
	} {
		c := DefaultReactionConfig()
		tt.edit(&c)
		if err := c.Validate(); err == nil || !contains(err.Error(), tt.field) {
			t.Errorf("%s: error %v", tt.field, err)
		}
	}
}

// TestReactionBeforeConnect: a notification for a QP whose CM exchange
// has not completed finds no active QP (§5.6 step 2).
func TestReactionBeforeConnect(t *testing.T) {
	l := newLine(t, lineOpts{dcqcn: true})
	deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2,
		wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}))
	if l.flow.Sender.Active() {
		t.Fatal("the QP connected within 50 µs on a 200 µs round trip")
	}
	if c := l.rp.Counters(); c.InactiveQP != 1 || c.AcceptedRateReduce != 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestReactionNoFrame: an extended CNP without its frame cannot be read.
func TestReactionNoFrame(t *testing.T) {
	l := newLine(t, lineOpts{dcqcn: true})
	waitActive(t, l)
	p := craft(t, l.net, l.n1, l.src, FormatRoCEv2,
		wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100})
	if err := l.net.SetFrame(p, nil); err != nil {
		t.Fatal(err)
	}
	deliver(t, l, l.n1, p)
	if c := l.rp.Counters(); c.Malformed != 1 || c.AcceptedRateReduce != 0 {
		t.Errorf("counters %+v", c)
	}
	if r := l.flow.Sender.RateBitsPerSec(); r != 10e9 {
		t.Errorf("rate %d", r)
	}
}

// TestReactionNoHold: without HoldRate a Rate Reduce sets no ceiling and
// DCQCN's increases raise the rate again; turning the hold off lifts one
// in place.
func TestReactionNoHold(t *testing.T) {
	rc := DefaultReactionConfig()
	rc.TrustedSources = trusted(false)
	rc.RTTEst = 100 * engine.Millisecond // no recovery during the test
	rc.HoldRate = false
	l := newLine(t, lineOpts{dcqcn: true, rc: rc})
	waitActive(t, l)
	q := l.flow.Sender
	deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2,
		wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}))
	if q.RateBitsPerSec() != 7e9 || q.CeilingBitsPerSec() != 0 {
		t.Fatalf("rate %d ceiling %d", q.RateBitsPerSec(), q.CeilingBitsPerSec())
	}
	l.sim.Run(l.sim.Now() + 5*engine.Millisecond)
	if q.RateBitsPerSec() <= 7e9 {
		t.Errorf("rate %d: DCQCN did not raise it without the hold", q.RateBitsPerSec())
	}

	rc.HoldRate = true
	l = newLine(t, lineOpts{dcqcn: true, rc: rc})
	waitActive(t, l)
	q = l.flow.Sender
	deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2,
		wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}))
	if q.CeilingBitsPerSec() != 7e9 {
		t.Fatalf("ceiling %d with the hold", q.CeilingBitsPerSec())
	}
	rc.HoldRate = false
	if err := l.rp.ApplyConfig(rc); err != nil {
		t.Fatal(err)
	}
	deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2,
		wire.LongHaul{CongLevel: 20, Action: wire.ActionResume, Parameter: 10, SourceQP: 100}))
	if q.CeilingBitsPerSec() != 0 {
		t.Errorf("ceiling %d after the hold was turned off", q.CeilingBitsPerSec())
	}
}

// TestPauseStopsThenResumes checks the Pause action end to end (§5.5.1,
// §5.6 step 3): the source's QP, sending 10 Gb/s, sends nothing for the
// 500 µs of the Pause from its arrival and then sends at its rate again.
func TestPauseStopsThenResumes(t *testing.T) {
	const pause = 500 * engine.Microsecond
	rc := DefaultReactionConfig()
	rc.TrustedSources = trusted(false)
	rc.RTTEst = 100 * engine.Millisecond // no recovery timer during the test
	l := newLine(t, lineOpts{rc: rc})
	waitActive(t, l)
	q := l.flow.Sender
	l.sim.Run(l.sim.Now() + 100*engine.Microsecond)
	p := craft(t, l.net, l.n1, l.src, FormatRoCEv2,
		wire.LongHaul{CongLevel: 230, Action: wire.ActionPause, Parameter: uint16(pause / engine.Microsecond), SourceQP: 100})
	if !l.n1.Send(p) {
		t.Fatal("no route")
	}
	type sample struct {
		t    engine.Time
		sent int64
	}
	var samples []sample
	var arrived engine.Time = -1
	for end := l.sim.Now() + 2*pause; l.sim.Now() < end; {
		l.sim.Run(l.sim.Now() + engine.Microsecond)
		now := l.sim.Now()
		if arrived < 0 && q.PausedUntil() > now {
			arrived = now
		}
		samples = append(samples, sample{now, q.SentBytes()})
	}
	if arrived < 0 || l.rp.Counters().AcceptedPause != 1 {
		t.Fatalf("pause not applied: counters %+v", l.rp.Counters())
	}
	at := func(t0 engine.Time) int64 {
		var v int64
		for _, s := range samples {
			if s.t <= t0 {
				v = s.sent
			}
		}
		return v
	}
	// At most the packet being sent when the Pause came is counted after
	// its arrival (4 KB of payload plus headers).
	const onePacket = 4200
	if got := at(arrived+pause-engine.Microsecond) - at(arrived); got > onePacket {
		t.Errorf("%d bytes sent during the %v pause", got, pause)
	}
	// After it: 10 Gb/s again, 125 KB per 100 µs (± a packet).
	after := arrived + pause + 10*engine.Microsecond
	if got := at(after+100*engine.Microsecond) - at(after); got < 125_000-onePacket || got > 125_000+onePacket {
		t.Errorf("%d bytes in the 100 µs after the pause, want about 125000 (10 Gb/s)", got)
	}
}

// TestReactionIgnoresReservedBits: §6.1 "Receivers MUST ignore the
// reserved bits". A Rate Reduce whose six reserved action bits are set (a
// frame the encoder refuses to write, so the bits are set in the encoded
// bytes and the ICRC or checksum recomputed) is decoded and applied like
// any other, in both formats.
func TestReactionIgnoresReservedBits(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		v6     bool
		format Format
	}{
		{"rocev2 over ipv4", false, FormatRoCEv2},
		{"icmpv6", true, FormatICMPv6},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			rc := DefaultReactionConfig()
			rc.TrustedSources = trusted(tt.v6)
			rc.RTTEst = 100 * engine.Millisecond
			l := newLine(t, lineOpts{v6: tt.v6, rc: rc})
			waitActive(t, l)
			p := craft(t, l.net, l.n1, l.src, tt.format,
				wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100})
			f := p.Frame()
			if tt.format == FormatRoCEv2 {
				f[wire.EthernetLen+20+wire.UDPLen+wire.BTHLen+1] |= 0x3F // Action Flags: 10 111111
				p.Hdr[wire.BTHLen+1] |= 0x3F
			} else {
				f[wire.EthernetLen+40+5] |= 0x3F
				p.Hdr[5] |= 0x3F
			}
			reseal(t, f, tt.format)
			deliver(t, l, l.n1, p)
			c := l.rp.Counters()
			if c.AcceptedRateReduce != 1 || c.Malformed+c.Inconsistent != 0 {
				t.Fatalf("counters %+v: want the rate reduce applied", c)
			}
			if got := l.rp.frame.LongHaul.ActionReserved; got != 0x3F {
				t.Errorf("decoded reserved bits %#x, want 0x3f (the frame really carried them)", got)
			}
			if got := l.flow.Sender.RateBitsPerSec(); got != 7e9 {
				t.Errorf("rate %d, want 7 Gb/s", got)
			}
		})
	}
}

// TestReactionRecoveryStepBitsPerSec: with RecoveryStepBitsPerSec the additive step is
// that many bits per second per tick, whatever the QP's rates (a
// scenario's recovery_step, end to end): 7 -> 8 -> 9 -> 10 Gb/s with
// 1 Gb/s steps every RTT_est / 10.
func TestReactionRecoveryStepBitsPerSec(t *testing.T) {
	const rtt = 2 * engine.Millisecond
	rc := DefaultReactionConfig()
	rc.TrustedSources = trusted(false)
	rc.RTTEst = rtt
	rc.RecoveryStepBitsPerSec = 1e9
	l := newLine(t, lineOpts{dcqcn: true, rc: rc})
	waitActive(t, l)
	q := l.flow.Sender
	deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2,
		wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}))
	t0 := l.rp.states[0].r.LastCNP
	var got []int64
	for i := range 4 {
		// Just after the timer (2 x RTT_est) and each tick (RTT_est / 10).
		l.sim.Run(t0 + 2*rtt + engine.Time(i)*rtt/10 + engine.Microsecond)
		got = append(got, q.RateBitsPerSec())
	}
	if diff := cmp.Diff([]int64{8e9, 9e9, 10e9, 10e9}, got); diff != "" {
		t.Errorf("rates after the recovery timer, tick by tick (-want +got):\n%s", diff)
	}
}

// TestReactionForgetsRetiredQP: when the network retires a finished flow
// (netsim.Network.RetireFinished), the reaction point drops the state it
// kept for the flow's QP and holds no reference to it; the recovery timer
// the reduction left behind does nothing when it fires; the next QP that
// gets a notification reuses the slot and reacts as usual.
func TestReactionForgetsRetiredQP(t *testing.T) {
	rc := DefaultReactionConfig()
	rc.TrustedSources = trusted(false)
	rc.RTTEst = 2 * engine.Millisecond
	l := newLine(t, lineOpts{dcqcn: true, rc: rc, flowBytes: 1 << 20, noCM: true})
	if err := l.net.RetireFinished(engine.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitActive(t, l)
	q := l.flow.Sender
	rr := wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 100}
	deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2, rr))
	if got := l.rp.TrackedQPs(); got != 1 || q.RateBitsPerSec() != 7e9 {
		t.Fatalf("after a Rate Reduce: %d QPs tracked, rate %d; want 1 and 7 Gb/s", got, q.RateBitsPerSec())
	}
	// The flow ends, is retired a millisecond later, and the recovery
	// timer (2 x RTT_est after the cut) fires after that.
	l.sim.Run(l.sim.Now() + 10*rc.RTTEst)
	if !l.flow.Retired() {
		t.Fatal("flow not retired")
	}
	if _, ok := l.rp.QP(q); ok || l.rp.TrackedQPs() != 0 {
		t.Errorf("the reaction point still tracks the retired QP (%d tracked)", l.rp.TrackedQPs())
	}
	for _, s := range l.rp.states {
		if s.q == q {
			t.Error("a state still references the retired QP")
		}
	}
	// A new flow from the same source: its notification reuses the slot.
	f2, err := l.net.AddFlow(netsim.FlowConfig{Name: "f2", Src: l.src, Dst: l.dst, SrcQPN: 101, DstQPN: 201, NoCM: true,
		Start: l.sim.Now()})
	if err != nil {
		t.Fatal(err)
	}
	l.sim.Run(l.sim.Now() + 100*engine.Microsecond)
	rr.SourceQP = 101
	deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2, rr))
	if got := f2.Sender.RateBitsPerSec(); got != 7e9 || len(l.rp.states) != 1 || l.rp.TrackedQPs() != 1 {
		t.Errorf("new QP: rate %d, %d state slots, %d tracked; want 7 Gb/s, 1 slot reused, 1 tracked",
			got, len(l.rp.states), l.rp.TrackedQPs())
	}
	if r, ok := l.rp.QP(f2.Sender); !ok || !r.Reduced {
		t.Errorf("new QP's reaction %+v (tracked %v), want reduced", r, ok)
	}
}

// standardCNP returns a receiver's CNP (DCQCN's, E = 0) from l's
// destination to its source's QP.
func standardCNP(l *line) *netsim.Packet {
	c := l.net.NewPacket()
	c.Kind = netsim.KindRoCE
	c.SizeBytes = 64
	c.Src, c.Dst = l.dst.ID(), l.src.ID()
	c.Flow = l.flow.ID
	c.ECN = netsim.ECNNotECT
	c.SetBTH(&wire.BTH{Opcode: wire.OpCNP, PKey: 0xFFFF, Byte4: wire.BTHBECN, DestQP: l.flow.Sender.QPN})
	return c
}

// TestCutFromEpisodeRate: receivers' CNPs cut a 10 Gb/s QP, then a node's
// Rate Reduce 80 arrives. By default (§5.6) it cuts the rate the CNPs left
// and an unconditional Resume restores that rate; with CutFromEpisodeRate
// the cut counts from the 10 Gb/s before the CNPs (the node's cut replaces
// theirs: 2 Gb/s, held), and the Resume restores 10 Gb/s. CNPs of an
// episode over (more than a recovery interval before the cut) are not
// counted.
func TestCutFromEpisodeRate(t *testing.T) {
	rr := wire.LongHaul{CongLevel: 180, Action: wire.ActionRateReduce, Parameter: 80, SourceQP: 100}
	resume := wire.LongHaul{CongLevel: 20, Action: wire.ActionResume, Parameter: 0, SourceQP: 100}
	for _, tt := range []struct {
		desc     string
		on       bool
		idle     engine.Time // between the CNPs and the Rate Reduce
		wantBase func(afterCNPs int64) int64
	}{
		{desc: "draft: from the rate the cnps left", wantBase: func(r int64) int64 { return r }},
		{desc: "option: from the rate before the cnps", on: true, wantBase: func(int64) int64 { return 10e9 }},
		{desc: "option: an episode over is not counted", on: true, idle: 3 * engine.Millisecond,
			wantBase: func(r int64) int64 { return r }},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			rc := DefaultReactionConfig()
			rc.TrustedSources = trusted(false)
			rc.RTTEst = 100 * engine.Millisecond // no recovery during the test
			rc.RecoveryInterval = engine.Millisecond
			rc.CutFromEpisodeRate = tt.on
			l := newLine(t, lineOpts{dcqcn: true, rc: rc})
			waitActive(t, l)
			q := l.flow.Sender
			for range 3 {
				deliver(t, l, l.n1, standardCNP(l))
			}
			if q.CNPs() != 3 || q.RateBitsPerSec() >= 10e9 {
				t.Fatalf("after 3 cnps: %d cnps, rate %d", q.CNPs(), q.RateBitsPerSec())
			}
			// DCQCN's own increases (the idle case) are held off by the
			// Rate Reduce's ceiling only from the cut on.
			l.sim.Run(l.sim.Now() + tt.idle)
			base := tt.wantBase(q.RateBitsPerSec())
			deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2, rr))
			if want := base * 20 / 100; q.RateBitsPerSec() != want || q.CeilingBitsPerSec() != want {
				t.Errorf("after rate reduce 80: rate %d, ceiling %d, want both %d", q.RateBitsPerSec(), q.CeilingBitsPerSec(), want)
			}
			deliver(t, l, l.n1, craft(t, l.net, l.n1, l.src, FormatRoCEv2, resume))
			if q.RateBitsPerSec() != base {
				t.Errorf("after resume 0: rate %d, want %d", q.RateBitsPerSec(), base)
			}
		})
	}
}
