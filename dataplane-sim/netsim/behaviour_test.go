package netsim

import (
	"crypto/sha256"
	"fmt"
	"math"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// An N-to-1 incast grows the bottleneck queue at (sum of rates - capacity)
// until the first marks come back as CNPs; marking starts only above K_min.
func TestIncastQueueGrowth(t *testing.T) {
	const rate = 25e9
	const senders = 4
	const kmin, kmax = 400_000, 1_600_000
	in := newIncast(t, incastCfg{senders: senders, rateBitsPerSec: rate, accessDelay: engine.Microsecond,
		bnDelay: 20 * engine.Microsecond, port: dcqcnPort(kmin, kmax, 64<<20), host: DefaultHostConfig()})
	type sample struct {
		t engine.Time
		q int64
	}
	var samples []sample
	var firstMarkQ int64 = -1
	var firstCNP engine.Time = -1
	in.sim.Every(0, engine.Microsecond, func(now engine.Time) {
		samples = append(samples, sample{now, in.bottleneck.TotalQueueBytes()})
		if firstMarkQ < 0 && in.bottleneck.Stats().ECNMarks > 0 {
			firstMarkQ = in.bottleneck.TotalQueueBytes()
		}
		if firstCNP < 0 && in.flows[0].Sender.CNPs()+in.flows[1].Sender.CNPs() > 0 {
			firstCNP = now
		}
	})
	in.sim.Run(300 * engine.Microsecond)
	if firstCNP < 0 || firstMarkQ < 0 {
		t.Fatalf("no marks or no CNPs (first mark at queue %d, first CNP %v)", firstMarkQ, firstCNP)
	}
	if firstMarkQ < kmin {
		t.Errorf("first mark with the queue at %d bytes, below K_min %d", firstMarkQ, kmin)
	}
	// Slope from 10 µs after the last sender started sending (its CM
	// exchange takes a round trip after its start) to the first CNP, least
	// squares.
	var t0 engine.Time
	for _, f := range in.flows {
		t0 = max(t0, f.Sender.ConnectedAt())
	}
	var sx, sy, sxx, sxy, n float64
	for _, s := range samples {
		if s.t < t0+10*engine.Microsecond || s.t >= firstCNP {
			continue
		}
		x, y := float64(s.t), float64(s.q)
		sx, sy, sxx, sxy, n = sx+x, sy+y, sxx+x*x, sxy+x*y, n+1
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx) // bytes per ns
	want := (senders*rate - rate) / 8 / 1e9
	if math.Abs(slope-want)/want > 0.02 {
		t.Errorf("queue grew at %.3f B/ns (%.1f Gb/s), want %.3f B/ns (sum of rates - capacity)", slope, slope*8, want)
	}
	t.Logf("slope %.2f Gb/s over %d samples, first mark at %d B, first CNP at %v", slope*8, int(n), firstMarkQ, firstCNP)
}

// Two DCQCN flows on one bottleneck converge to equal shares, the second
// starting while the first has the link to itself.
func TestDCQCNConvergence(t *testing.T) {
	if testing.Short() {
		t.Skip("long simulation")
	}
	const rate = 25e9
	in := newIncast(t, incastCfg{senders: 2, rateBitsPerSec: rate, accessDelay: 2 * engine.Microsecond,
		bnDelay: 2 * engine.Microsecond, port: dcqcnPort(20_000, 200_000, 16<<20), host: DefaultHostConfig(),
		starts: []engine.Time{0, 5 * engine.Millisecond}})
	const from, to = 40 * engine.Millisecond, 60 * engine.Millisecond
	var rx0 [2]int64
	in.sim.AtFunc(from, func() {
		for i := range rx0 {
			rx0[i] = in.flows[i].Receiver.RxBytes()
		}
	})
	in.sim.Run(to)
	var got [2]float64
	for i := range got {
		got[i] = float64(in.flows[i].Receiver.RxBytes()-rx0[i]) * 8 / (to - from).Seconds()
	}
	total := got[0] + got[1]
	if total < 0.9*rate {
		t.Errorf("bottleneck used %.2f Gb/s of %.0f", total/1e9, rate/1e9)
	}
	for i, g := range got {
		if share := g / total; math.Abs(share-0.5) > 0.1 {
			t.Errorf("flow %d share %.3f (%.2f Gb/s), want 0.5 +- 0.1", i, share, g/1e9)
		}
	}
	t.Logf("rates %.2f / %.2f Gb/s, cuts %d / %d", got[0]/1e9, got[1]/1e9,
		in.flows[0].Sender.RateCuts(), in.flows[1].Sender.RateCuts())
}

// With only receiver CNPs and a 10 ms RTT, the queue overshoots by about
// (sum of rates - capacity) x RTT before the first rate cut lands: the
// failure Long-haul CNP exists to fix.
func TestLongRTTOvershoot(t *testing.T) {
	const rate = 25e9
	const senders = 4
	const oneWay = 5 * engine.Millisecond
	in := newIncast(t, incastCfg{senders: senders, rateBitsPerSec: rate, accessDelay: engine.Microsecond,
		bnDelay: oneWay, port: dcqcnPort(100_000, 400_000, 1<<30), host: DefaultHostConfig()})
	in.sim.Run(25 * engine.Millisecond)
	peak := in.bottleneck.Stats().PeakQueueBytes
	rtt := 2 * (oneWay + engine.Microsecond)
	want := float64(senders*rate-rate) / 8 * rtt.Seconds()
	if d := math.Abs(float64(peak)-want) / want; d > 0.05 {
		t.Errorf("peak queue %.2f MB, want %.2f MB ((sum-capacity) x RTT) within 5%%", float64(peak)/1e6, want/1e6)
	}
	if d := in.bottleneck.Stats().DropPackets; d != 0 {
		t.Errorf("%d drops, want none (buffer 1 GiB)", d)
	}
	for i, f := range in.flows {
		if f.Sender.RateCuts() == 0 {
			t.Errorf("flow %d never cut its rate", i)
		}
	}
	t.Logf("peak %.2f MB, predicted %.2f MB, events %d", float64(peak)/1e6, want/1e6, in.sim.Events())
}

// PFC prevents drops in an incast that overflows the buffer without it.
func TestPFCPreventsDrops(t *testing.T) {
	const rate = 25e9
	run := func(pfc bool) (drops int64, rxBitsPerSec float64, pauses int64) {
		cfg := PortConfig{BufferBytes: 1 << 20}
		if pfc {
			cfg.PFC = PFCConfig{Enabled: true, XOFFBytes: 120_000, XONBytes: 100_000}
		}
		hc := DefaultHostConfig()
		hc.DCQCN.Enabled = false
		hc.NP.Disabled = true
		in := newIncast(t, incastCfg{senders: 4, rateBitsPerSec: rate, accessDelay: engine.Microsecond,
			bnDelay: engine.Microsecond, port: cfg, host: hc})
		const end = 3 * engine.Millisecond
		in.sim.Run(end)
		var rx int64
		for _, f := range in.flows {
			rx += f.Receiver.RxBytes()
		}
		for _, p := range in.sw.Ports() {
			st := p.Stats()
			pauses += st.PFCPauseTx
			var byPrio int64
			for _, n := range st.PFCPauseTxPrio {
				byPrio += n
			}
			if byPrio != st.PFCPauseTx {
				t.Errorf("port %s: %d PAUSE frames by priority, %d in all", p.Name(), byPrio, st.PFCPauseTx)
			}
			// A port that sent no PFC frame sent only from its queues.
			var txBytes int64
			for _, n := range st.TxPrioBytes {
				txBytes += n
			}
			if st.PFCPauseTx+st.PFCResumeTx == 0 && txBytes != st.TxBytes {
				t.Errorf("port %s: %d bytes sent by priority, %d in all", p.Name(), txBytes, st.TxBytes)
			}
		}
		return in.bottleneck.Stats().DropPackets, float64(rx*8) / end.Seconds(), pauses
	}
	drops, rx, pauses := run(true)
	if drops != 0 {
		t.Errorf("PFC on: %d drops, want 0", drops)
	}
	if pauses == 0 {
		t.Errorf("PFC on: no pause frames sent")
	}
	if rx < 0.95*rate*4096/(4096+RoCEv4OverheadBytes) {
		t.Errorf("PFC on: goodput %.2f Gb/s, want the bottleneck's line rate", rx/1e9)
	}
	drops0, _, _ := run(false)
	if drops0 == 0 {
		t.Errorf("PFC off: no drops; the test does not overflow the buffer")
	}
	t.Logf("PFC on: %d pauses, %.2f Gb/s, 0 drops; off: %d drops", pauses, rx/1e9, drops0)
}

// The same scenario and seed give the same trace, byte for byte.
func TestDeterministic(t *testing.T) {
	trace := func(seed uint64) [32]byte {
		in := newIncast(t, incastCfg{senders: 3, rateBitsPerSec: 25e9, accessDelay: engine.Microsecond,
			bnDelay: 10 * engine.Microsecond, port: dcqcnPort(50_000, 200_000, 4<<20), host: DefaultHostConfig(),
			seed: seed, starts: []engine.Time{0, 100 * engine.Microsecond, 300 * engine.Microsecond}})
		h := sha256.New()
		in.sim.Every(0, 5*engine.Microsecond, func(now engine.Time) {
			s := in.net.Snapshot()
			fmt.Fprintf(h, "%d %d", now, s.Events)
			for _, p := range s.Ports {
				fmt.Fprintf(h, " %d %d %d", p.TotalBytes, p.ECNMarks, p.TxBytes)
			}
			for _, f := range s.Flows {
				fmt.Fprintf(h, " %d %d %g %d", f.RateBitsPerSec, f.TargetRateBitsPerSec, f.Alpha, f.RxBytes)
			}
			fmt.Fprintln(h)
		})
		in.sim.Run(3 * engine.Millisecond)
		return [32]byte(h.Sum(nil))
	}
	a, b := trace(7), trace(7)
	if a != b {
		t.Errorf("two runs with seed 7 differ: %x vs %x", a, b)
	}
	if c := trace(8); c == a {
		t.Errorf("seeds 7 and 8 give the same trace; marking randomness is not seeded from the Sim")
	}
}
