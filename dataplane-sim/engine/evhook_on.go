//go:build lhcnp_evhook

package engine

// With the lhcnp_evhook build tag (go test -tags lhcnp_evhook), a Sim
// calls the functions of SetEventHook around every event Run processes:
// for tests that count a run's events by kind (docs/engine.md, "One
// thread, sixth pass"). Without the tag the hook does not exist and costs
// nothing.
const hookEvents = true

type eventHook struct {
	b, a func(h Handler, kind uint32, arg uint64)
}

func (k eventHook) before(h Handler, kind uint32, arg uint64) {
	if k.b != nil {
		k.b(h, kind, arg)
	}
}

func (k eventHook) after(h Handler, kind uint32, arg uint64) {
	if k.a != nil {
		k.a(h, kind, arg)
	}
}

// SetEventHook makes Run call before and after (either may be nil) around
// each event's handler.
func (s *Sim) SetEventHook(before, after func(h Handler, kind uint32, arg uint64)) {
	s.hook = eventHook{before, after}
}
