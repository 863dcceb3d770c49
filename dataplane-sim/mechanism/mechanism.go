// Package mechanism is what the congestion-notification mechanisms of a
// switch have in common: the Function interface that each mechanism's
// package implements beside its model (fastcnp, fcn, switchcnp,
// rateadvice). A switch's gNMI target (server/dataplane) configures a
// mechanism and reads its state back through it, and the batch runner
// (package sim) reads its counters through it; neither holds a field or
// a case per mechanism.
//
// A Function drives the Long-haul CNP node (package lhcnp) already
// attached to a switch: either as the node's mode (Fast CNP, an FCN role,
// the switch CNP: the node's detection, another mechanism's notification;
// at most one mode is on) or beside whatever the mode is (Rate Advice:
// it watches the same ports and notifies on its own).
//
// It must not import gen/ or server/, nor any mechanism's package.
package mechanism

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// Function is one mechanism on one switch. Call its methods from the
// engine's goroutine (a handler, or engine.Sim.Do).
type Function interface {
	// Validate checks cfg, a configuration of the mechanism's own type
	// (fastcnp.Config, ...), without changing anything.
	Validate(cfg any) error
	// Configure validates cfg and makes it the running configuration; lc
	// is the node's own Long-haul CNP configuration, which a mode switched
	// off hands the node back. On error the function runs as before.
	Configure(cfg any, lc lhcnp.Config) error
	// Observer is what the switch's ports report to while the function
	// is on: the node's mode, or what goes beside it.
	Observer() netsim.PortObserver
	// State returns the configuration in use, the counters and what the
	// function observes, as a value of the mechanism's own type (for the
	// gNMI target's state tree).
	State() any
	// Counters returns the function's counters by name: the batch runner
	// sums them over the switches into summary.json's
	// mechanism_counters, keeping the largest of a name that starts with
	// "max_".
	Counters() map[string]int64
}

// ConfigAs returns cfg as a mechanism's configuration type C, or an error
// naming both types.
func ConfigAs[C any](cfg any) (C, error) {
	c, ok := cfg.(C)
	if !ok {
		return c, fmt.Errorf("configuration of type %T, want %T", cfg, c)
	}
	return c, nil
}

// Validate checks that cfg is a C and valid (its Validate); errors are
// prefixed with where (the mechanism and switch).
func Validate[C any, P interface {
	*C
	Validate() error
}](cfg any, where string) error {
	c, err := ConfigAs[C](cfg)
	if err == nil {
		err = P(&c).Validate()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// AddCounters adds a function's counters into the run's: sums, and the
// largest for a name that starts with "max_".
func AddCounters(into, from map[string]int64) {
	for k, v := range from {
		if len(k) > 4 && k[:4] == "max_" {
			into[k] = max(into[k], v)
			continue
		}
		into[k] += v
	}
}

// ChainControl puts c in front of h's control handler: control packets
// go to c first, then to the handler h had (a mechanism's receiver on an
// RNIC that already runs another's).
func ChainControl(h *netsim.Host, c netsim.ControlHandler) {
	if prev := h.ControlHandler(); prev != nil {
		h.SetControlHandler(firstOf{c, prev})
	} else {
		h.SetControlHandler(c)
	}
}

// firstOf offers a control packet to a, then to b.
type firstOf struct{ a, b netsim.ControlHandler }

func (f firstOf) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	return f.a.HandleControl(h, p) || f.b.HandleControl(h, p)
}

// Beside makes every port of sw report to base (the node's mode) and then
// to o, a function beside it that only watches what is enqueued; base
// alone filters the marks. A base that is itself a Beside pair is
// replaced, not nested: a function beside the mode is set again after
// each change of mode.
func Beside(sw *netsim.Switch, o netsim.PortObserver) {
	if len(sw.Ports()) == 0 {
		return
	}
	base := sw.Ports()[0].Observer()
	if p, ok := base.(pair); ok {
		base = p.a
	}
	sw.SetObserver(pair{base, o})
}

// pair gives every port event to a, then the enqueues to b; a filters the
// marks.
type pair struct {
	a, b netsim.PortObserver
}

func (p pair) OnEnqueue(pt *netsim.Port, x *netsim.Packet, q int64) {
	p.a.OnEnqueue(pt, x, q)
	p.b.OnEnqueue(pt, x, q)
}
func (p pair) OnDequeue(pt *netsim.Port, x *netsim.Packet, q int64) { p.a.OnDequeue(pt, x, q) }
func (p pair) OnMark(pt *netsim.Port, x *netsim.Packet, q int64)    { p.a.OnMark(pt, x, q) }
func (p pair) OnDrop(pt *netsim.Port, x *netsim.Packet, q int64)    { p.a.OnDrop(pt, x, q) }
func (p pair) AllowMark(pt *netsim.Port, x *netsim.Packet) bool {
	if m, ok := p.a.(netsim.MarkFilter); ok {
		return m.AllowMark(pt, x)
	}
	return true
}

// Limits are how often a mechanism that runs as the node's mode notifies:
// each flow at most once per MinCNPInterval, each port through a bucket of
// PortCNPRatePerSec and PortCNPBurst, at most MaxFlowsPerTrigger flows per
// congestion event.
type Limits struct {
	MinCNPInterval                  engine.Time
	PortCNPRatePerSec, PortCNPBurst int64
	MaxFlowsPerTrigger              int
}

// DetectionConfig is the Long-haul CNP node's configuration under a
// mechanism that runs as its mode (Fast CNP, an FCN role, the switch CNP):
// the node detects and chooses the flows, the mechanism notifies, within
// l; no Pause, no Resume, no collaboration (none of them has any). The
// node re-evaluates a congested queue once per measurement interval: once
// per per-flow interval here. The caller sets the trigger (K_max, ...).
func DetectionConfig(enabled bool, dscp, prio uint8, l Limits) lhcnp.Config {
	lc := lhcnp.DefaultConfig()
	lc.Enabled = enabled
	lc.CNPDSCP, lc.CNPPrio = dscp, prio
	lc.Collaborative.Enabled, lc.Collaborative.UpstreamFirst = false, false
	ic := &lc.Interface
	ic.CNPRatePerSec, ic.CNPBurst = l.PortCNPRatePerSec, l.PortCNPBurst
	q := &ic.Queue
	q.MinCNPInterval = l.MinCNPInterval
	q.MeasurementInterval, q.EMRWindow = l.MinCNPInterval, l.MinCNPInterval
	q.Action.PauseLevel = lhcnp.PauseLevelNever
	q.Action.ResumeEnabled = false
	q.Action.MaxFlowsPerTrigger = l.MaxFlowsPerTrigger
	return lc
}
