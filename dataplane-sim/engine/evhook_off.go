//go:build !lhcnp_evhook

package engine

// Without the lhcnp_evhook build tag the event hook is empty and
// runLocked's calls to it compile to nothing.
const hookEvents = false

type eventHook struct{}

func (eventHook) before(Handler, uint32, uint64) {}
func (eventHook) after(Handler, uint32, uint64)  {}
