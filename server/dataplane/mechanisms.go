package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// A mechanismKind is how the target runs one mechanism beside the served
// switch's Long-haul CNP node: its YANG leaves translated into the
// dataplane's configuration, its mechanism.Function created on the node the
// first time it is on, and its state written into the YANG state tree.
// Each mechanism's file registers its kind (register, from init); the
// Binding holds no field and no case per mechanism.
type mechanismKind struct {
	name string
	// beside: the function runs beside the node's mode (Rate Advice)
	// instead of being it.
	beside bool
	// translate reads the mechanism's leaves into its configuration,
	// validated, and tells whether its own leaf turns it on (the master
	// switch aside); lc is the translated Long-haul CNP configuration
	// (the leaves the mechanisms share). Errors name the YANG path.
	translate func(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, ports *Ports) (cfg any, on bool, err error)
	// off returns cfg with the mechanism off and every other value kept:
	// what runs while the master switch is off.
	off func(cfg any) any
	// create makes the function on node the first time its own leaf is
	// on or standing holds, with cfg, what runs (off while the master
	// switch is): off for a mode (Configure follows), configured for one
	// beside.
	create func(node *lhcnp.Node, cfg any) (mechanism.Function, error)
	// standing, if set, tells whether cfg (as configured) has the
	// function do something with its own leaf off that is not a
	// notification, a protection (Fast CNP's border filtering): the
	// function is created for it too, and it goes on whatever the master
	// switch, which gates what the switch sends.
	standing func(cfg any) bool
	// state writes the function's State into root, and cfg, the
	// configuration as configured (on even while the master switch
	// holds it off), as the state's echo of the config leaves.
	state func(root *oc.Root, st, cfg any, v stateEnv)
	// idle is the state before the function exists (no counters, nothing
	// observed), which state writes from the first Set that configures
	// the mechanism, so that its container echoes the configuration.
	idle any
	// queueCount, if set, returns the per-queue counter leaf that the
	// notifications the node hands to this mechanism count in, or nil,
	// from its configuration as configured.
	queueCount func(cfg any) queueCounter
	// format, if set, is the format of the notifications the node hands
	// to this mechanism while it is configured on (UNSET when it is not):
	// the last CNP's format when it went that way (lhcnp.FormatExternal).
	format func(cfg any) oc.E_LhcnpTypes_NotificationFormat
}

// queueCounter sets one counter leaf of a queue.
type queueCounter func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64)

// stateEnv is what the state writers need of the binding.
type stateEnv struct {
	ports  *Ports
	wallNS func(engine.Time) uint64
}

// registry holds the mechanism kinds by name; it is written only by
// register, from the mechanisms' init functions.
var registry = map[string]mechanismKind{}

// register adds a mechanism kind (from an init function).
func register(k mechanismKind) {
	if _, dup := registry[k.name]; dup {
		panic("dataplane: mechanism " + k.name + " registered twice")
	}
	registry[k.name] = k
}

// kinds returns the registered kinds in name order: the order in which
// they are translated, configured and written, the same on every Set.
func kinds() []mechanismKind {
	var out []mechanismKind
	for _, name := range slices.Sorted(maps.Keys(registry)) {
		out = append(out, registry[name])
	}
	return out
}

// translated is one mechanism's configuration from an intended tree.
type translated struct {
	kind mechanismKind
	// cfg is the configuration as configured, the state's echo; run is
	// what runs: cfg, or cfg off while the master switch is off.
	cfg, run any
	// configured: the mechanism's own leaf is on; on: it runs (its own
	// leaf and the master switch on).
	configured, on bool
}

// needed tells whether the function must exist: its own leaf is on, or
// it has standing work with the leaf off.
func (t translated) needed() bool {
	return t.configured || t.kind.standing != nil && t.kind.standing(t.cfg)
}

// enabledPath is the master switch.
const enabledPath = "/lhcnp/global/config/enabled"

// translateAll translates every registered mechanism's leaves and applies
// the master switch (lc.Enabled as ToConfig translated it) to them and to
// lc, the node's Long-haul CNP configuration. The YANG model's master
// switch: off, nothing marks or sends (the node's Long-haul CNP and its
// first-level marks, every mechanism), whatever the other leaves say,
// which are still validated and kept; on, a mechanism runs when its own
// leaf is on, and the node sends Long-haul CNPs when a format is on. On
// with no format (the node's check, §6: at least one) is accepted when
// another mechanism runs, the node sending no Long-haul CNP; with nothing
// to run it is refused naming the master switch: nothing would be sent.
func translateAll(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, ports *Ports) ([]translated, error) {
	master := lc.Enabled
	longHaul := lc.FormatICMPv6 || lc.FormatRoCEv2
	other := false
	var out []translated
	for _, k := range kinds() {
		cfg, configured, err := k.translate(l, lc, ports)
		if err != nil {
			return nil, err
		}
		t := translated{kind: k, cfg: cfg, run: cfg, configured: configured, on: configured && master}
		if !master {
			t.run = k.off(cfg)
		}
		other = other || configured
		out = append(out, t)
	}
	if master && !longHaul && !other {
		return nil, invalid(enabledPath, "true with no Long-haul CNP format (long-haul-cnp-icmpv6, long-haul-cnp-rocev2) "+
			"and no other mechanism on: nothing would be sent (§6: MUST support at least one format)")
	}
	lc.Enabled = master && longHaul
	return out, nil
}

// applyMechanisms puts the served switch in the mode the configuration
// asks for and the functions beside it (setMechanisms), on the engine
// goroutine, and keeps the master switch and the mechanisms'
// configurations as configured for the state's echo. It is all or
// nothing, as the target's Set is (service.Dataplane), and it fails, as
// far as it can, before it changes anything: the functions that exist
// validate their configuration, the ones the configuration needs and the
// switch does not have yet are created (createMechanisms) and validate
// theirs, and only then is anything configured. A function that cannot
// be created fails the Set with the switch untouched: setting it back
// would not be, the node counting an RTT_est update for each
// configuration that changes RTT_est and re-arming its timers (and Rate
// Advice its sweep), where a Set that changed nothing must show nothing.
// The functions the failed Set created are removed with what their
// creation put on the hosts and the switch (mechanism.Remover: Fast
// CNP's and Rate Advice's receivers, Fast CNP's filter), the ports'
// observers and the switch's forwarders as they were, and no event of
// theirs in the engine (Rate Advice's function is created held, its
// sweep armed when settled: mechanism.Deferrer); one that cannot be
// removed (the switch CNP, FCN) stays, never configured, and is not in
// the state (Snapshot), as before it existed.
//
// When a mechanism refuses its configuration while being configured
// (Configure, after its Validate accepted it), or keep (the startup
// configuration's write, called once every mechanism is configured)
// fails, the switch is set back to
// the last configuration applied, each mechanism as it was (one never
// applied, off), the node's bookkeeping of the change and the change
// back undone (lhcnp.Node.Restore: no RTT_est update counted, the CNP
// tokens as they were), and the error returned.
func (b *Binding) applyMechanisms(ts []translated, lc lhcnp.Config, master bool, keep func() error) error {
	for _, t := range ts {
		if f := b.funcs[t.kind.name]; f != nil {
			if err := f.Validate(t.run); err != nil {
				return err
			}
		}
	}
	existed := map[string]bool{}
	for name := range b.funcs {
		existed[name] = true
	}
	// What setting back would not put back as it was: the node's
	// bookkeeping of its configuration changes (RTT_est updates, CNP
	// tokens), restored once it runs the configuration before again; and
	// what it cannot undo (the entries a smaller flow table evicts, the
	// aging sweep a new idle timeout re-arms), deferred until the Set is
	// kept (lhcnp.Node.Commit).
	// The functions that defer the same (mechanism.Deferrer: Rate
	// Advice's sweep) are held too, and settled however the Set ends.
	cp := b.node.Checkpoint()
	for _, f := range b.funcs {
		if d, ok := f.(mechanism.Deferrer); ok {
			d.Hold()
		}
	}
	defer b.settle()
	if err := b.createMechanisms(ts, existed); err != nil {
		b.node.Restore(cp)
		return err
	}
	// The functions this Set created are held as well: configured and
	// set back, one leaves nothing behind either (FCN undoes a role it
	// created).
	for name, f := range b.funcs {
		if d, ok := f.(mechanism.Deferrer); ok && !existed[name] {
			d.Hold()
		}
	}
	err := b.setMechanisms(ts, lc, existed)
	if err == nil {
		err = keep()
	}
	if err == nil {
		b.node.Commit(cp)
		b.master = master
		for _, t := range ts {
			b.configured[t.kind.name] = t.cfg
			b.applied[t.kind.name] = t
		}
		return nil
	}
	// The functions this Set created go. One beside the mode goes first:
	// setting back puts the ports' observers together again without it.
	// A mode goes after: setting back turns it off, the node notifying
	// for itself again.
	remove := func(beside bool) {
		for _, t := range ts {
			name := t.kind.name
			if r, ok := b.funcs[name].(mechanism.Remover); ok && !existed[name] && t.kind.beside == beside {
				r.Remove()
				delete(b.funcs, name)
			}
		}
	}
	remove(true)
	// As it was: each mechanism applied before as then; one never applied
	// whose function exists (this Set's, or an earlier failed one's, that
	// cannot be removed, or a mode removed after) with its defaults, the
	// leaves of an empty tree: off, no standing work.
	var prev []translated
	for _, t := range ts {
		p, ok := b.applied[t.kind.name]
		if !ok {
			if b.funcs[t.kind.name] == nil {
				continue // never created, or removed: stays absent
			}
			lc := b.longHaul
			cfg, _, derr := t.kind.translate(&oc.Lhcnp_Lhcnp{}, &lc, b.ports)
			if derr != nil {
				b.node.Commit(cp)
				return errors.Join(err, fmt.Errorf("setting the switch back as it was: %w", derr))
			}
			p = translated{kind: t.kind, cfg: cfg, run: cfg}
		}
		prev = append(prev, p)
	}
	if rerr := b.setMechanisms(prev, b.longHaul, b.funcsSet()); rerr != nil {
		b.node.Commit(cp) // not as it was: what runs takes effect
		return errors.Join(err, fmt.Errorf("setting the switch back as it was: %w", rerr))
	}
	remove(false)
	b.node.Restore(cp)
	return err
}

// settle ends the Hold of every function that defers what it cannot undo
// (mechanism.Deferrer).
func (b *Binding) settle() {
	for _, name := range slices.Sorted(maps.Keys(b.funcs)) {
		if d, ok := b.funcs[name].(mechanism.Deferrer); ok {
			d.Settle()
		}
	}
}

// funcsSet returns the names of the functions that exist.
func (b *Binding) funcsSet() map[string]bool {
	out := map[string]bool{}
	for name := range b.funcs {
		out[name] = true
	}
	return out
}

// createMechanisms creates the functions ts needs that do not exist
// (existed: the names of those that do), each with what runs, the modes
// first, then the ones beside, in the kinds' order, and has each new one
// validate what runs. A function is needed when its own leaf is on or it
// has standing work (Fast CNP's border filtering), the master switch on
// or not: its state is published from then on. On error the switch is as
// it was: the functions created go (mechanism.Remover), or, one that
// cannot, stay unconfigured; the ports report to what they did and the
// switch forwards through what it did (a mode's creation makes itself
// the observer, Fast CNP's its filter).
func (b *Binding) createMechanisms(ts []translated, existed map[string]bool) error {
	sw := b.node.Switch()
	observers := make([]netsim.PortObserver, len(sw.Ports()))
	for i, pt := range sw.Ports() {
		observers[i] = pt.Observer()
	}
	var forwarders [netsim.NumForwardStages]netsim.Forwarder
	for st := range netsim.NumForwardStages {
		forwarders[st] = sw.Forwarder(st)
	}
	err := func() error {
		for _, beside := range []bool{false, true} {
			for _, t := range ts {
				if t.kind.beside != beside || !t.needed() || b.funcs[t.kind.name] != nil {
					continue
				}
				f, err := t.kind.create(b.node, t.run)
				if err != nil {
					return err
				}
				b.funcs[t.kind.name] = f
				if err := f.Validate(t.run); err != nil {
					return err
				}
			}
		}
		return nil
	}()
	if err == nil {
		return nil
	}
	for _, t := range ts {
		name := t.kind.name
		if r, ok := b.funcs[name].(mechanism.Remover); ok && !existed[name] {
			r.Remove()
			delete(b.funcs, name)
		}
	}
	for i, pt := range sw.Ports() {
		pt.SetObserver(observers[i])
	}
	for st, f := range forwarders {
		sw.SetForwarder(netsim.ForwardStage(st), f)
	}
	return err
}

// setMechanisms puts the served switch in the mode ts asks for and the
// functions beside it; the functions exist (createMechanisms), but for
// those ts does not need, and configured holds the names of those that
// have been configured before (a function beside the mode is created
// with its configuration and not configured again in the Set that
// created it). The functions beside are configured first: one that
// refuses its configuration does so before any mode or the node has
// changed, which setting back would not leave as they were (a role FCN
// creates on first use stays, with its timer). The translation refused
// the combinations that cannot coexist, so at most one mode is on. The
// modes that exist are switched off next and the one on last (each sets
// the node's mode), and the ports' observer is the one on (the node
// itself for Long-haul CNP); the functions beside go beside it
// afterwards.
func (b *Binding) setMechanisms(ts []translated, lc lhcnp.Config, configured map[string]bool) error {
	var beside []netsim.PortObserver
	for _, t := range ts {
		f := b.funcs[t.kind.name]
		if !t.kind.beside || f == nil {
			continue
		}
		if configured[t.kind.name] {
			if err := f.Configure(t.run, lc); err != nil {
				return err
			}
		}
		beside = append(beside, f.Observer())
	}
	modes := 0
	for _, t := range ts {
		if f := b.funcs[t.kind.name]; f != nil && !t.kind.beside {
			modes++
			if !t.on {
				if err := f.Configure(t.run, lc); err != nil {
					return err
				}
			}
		}
	}
	var active netsim.PortObserver = b.node
	for _, t := range ts {
		if f := b.funcs[t.kind.name]; f != nil && !t.kind.beside && t.on {
			if err := f.Configure(t.run, lc); err != nil {
				return err
			}
			active = f.Observer()
		}
	}
	if modes == 0 {
		if err := b.node.ApplyConfig(lc); err != nil {
			return err
		}
	}
	sw := b.node.Switch()
	sw.SetObserver(active)
	// Every function beside goes beside the mode at once: one at a time,
	// each would replace the one before (mechanism.Beside).
	if len(beside) > 0 {
		mechanism.Beside(sw, beside...)
	}
	return nil
}
