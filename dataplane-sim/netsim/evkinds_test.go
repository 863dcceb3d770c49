//go:build lhcnp_evhook

package netsim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// eventKind names what an event is about to do: its handler and kind,
// for a link where the packet lands and its opcode, for a DCQCN timer
// whether it is still current.
func eventKind(h engine.Handler, kind uint32, arg uint64) string {
	if x, ok := h.(*portTx); ok {
		h = (*Port)(x)
	}
	switch x := h.(type) {
	case *Port:
		where := "switch"
		if x.host != nil {
			where = "host"
		}
		switch {
		case kind == evTxDone:
			return "port/" + where + "/frame-done"
		case arg != x.wakeGen:
			return "port/" + where + "/wake-superseded"
		case x.frameDone:
			return "port/" + where + "/wake-before-frame-done"
		case x.part.sim.Now() < x.freeAt:
			return "port/" + where + "/wake-early"
		default:
			return "port/" + where + "/wake"
		}
	case *Link:
		if arg != x.gen || x.inflight.len() == 0 {
			return "link/stale"
		}
		p := x.inflight.front().p
		where := "switch"
		if _, ok := x.to.node.(*Host); ok {
			where = "host"
		}
		what := "other"
		switch p.Kind {
		case KindRoCE:
			what = fmt.Sprintf("opcode-%#x", uint8(p.Opcode()))
		case KindPFC:
			what = "pfc"
		}
		return "link/to-" + where + "/" + what
	case *qpTimers:
		if x.q == nil {
			return "dcqcn/detached"
		}
		s := &x.q.dc
		switch {
		case kind == evQPDecrease && s.cnpSinceDec:
			return "dcqcn/decrease"
		case kind == evQPDecrease:
			return "dcqcn/decrease-nothing"
		case arg != s.incGen && arg == s.incQGen:
			return "dcqcn/increase-moved-on"
		case arg != s.incGen:
			return "dcqcn/increase-superseded"
		case s.rc >= x.q.maxRate() && s.rt >= x.q.maxRate():
			return "dcqcn/increase-stops"
		default:
			return "dcqcn/increase"
		}
	case *QP:
		return fmt.Sprintf("qp/%d", kind)
	}
	return fmt.Sprintf("%T/%d", h, kind)
}

// TestSection7EventKinds counts BenchmarkSection7's events by kind (the
// table of docs/engine.md, "One thread, sixth pass"): go test -tags
// lhcnp_evhook -run Section7EventKinds -v ./dataplane-sim/netsim. A port's
// frame-done is split by whether the port transmits afterwards.
func TestSection7EventKinds(t *testing.T) {
	for _, mtu := range []int32{4096, 1024} {
		sim, _ := buildSection7(t, mtu, 1)
		counts := map[string]uint64{}
		var cur string
		sim.SetEventHook(func(h engine.Handler, kind uint32, arg uint64) {
			cur = eventKind(h, kind, arg)
		}, func(h engine.Handler, _ uint32, _ uint64) {
			if p, ok := h.(*Port); ok {
				if p.freeAt > p.part.sim.Now() {
					cur += "+sending"
				} else {
					cur += "+idle"
				}
			}
			counts[cur]++
		})
		sim.Run(100 * engine.Millisecond)
		var total uint64
		for _, n := range counts {
			total += n
		}
		if total != sim.Events() {
			t.Fatalf("mtu %d: counted %d events, the Sim %d", mtu, total, sim.Events())
		}
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Logf("mtu %d: %d events in 100 ms", mtu, total)
		for _, k := range keys {
			t.Logf("%-40s %9d %9.0f per ms %6.2f %%", k, counts[k], float64(counts[k])/100, 100*float64(counts[k])/float64(total))
		}
	}
}
