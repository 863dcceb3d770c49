package sim

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fastcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// FastCNPConfig maps the scenario's fast-cnp parameters onto a node's
// configuration (docs/scenarios.md): on, sending from the switch's
// address, the scenario's hosts as the controlled domain, every host known
// as capable when capable_senders is all.
func FastCNPConfig(p scenario.FastCNP, hosts []netip.Addr) fastcnp.Config {
	c := fastcnp.DefaultConfig()
	c.Enabled = true
	c.IOAM = p.IOAM
	c.KMaxBytes, c.KMinBytes, c.PMax = int64(p.KMax), int64(p.KMin), p.PMax
	c.MinCNPInterval = engine.FromDuration(p.CNPInterval)
	c.PortCNPRatePerSec, c.PortCNPBurst = int64(p.PortCNPRate), int64(p.PortCNPBurst)
	c.MaxFlowsPerTrigger = p.MaxFlows
	c.MarkUnknown = p.MarkUnknown
	c.CNPDSCP = uint8(p.DSCP)
	c.FlowTable.IdleTimeout = engine.FromDuration(p.FlowAging)
	for _, a := range hosts {
		c.Domain = append(c.Domain, netip.PrefixFrom(a, a.BitLen()))
	}
	if p.CapableSenders == "all" {
		c.CapableSenders = c.Domain
	}
	return c
}

func init() { install.RegisterCutInstaller(scenario.MechanismFastCNP, installFastCNP) }

// installFastCNP attaches a Fast CNP node (package fastcnp) to every
// switch of the block and a Fast CNP receiver to every host, trusting the
// nodes' addresses (the access list of §5); with rnic false the hosts
// discard Fast CNPs. Notifications count as sent_fast-cnp.
func installFastCNP(env *Env) error {
	p := env.Mech.FastCNP()
	var hosts []netip.Addr
	for _, h := range env.Net.Hosts() {
		if a := h.Addr(); a.IsValid() {
			hosts = append(hosts, a)
		}
	}
	cfg := FastCNPConfig(p, hosts)
	var fns []mechanism.Function
	var nodes []*fastcnp.Node
	var acl []netip.Prefix
	for _, sw := range env.Nodes {
		name := sw.Name()
		onEvent := func(ev lhcnp.Event) {
			if ev.Kind == lhcnp.EventCNPSent {
				env.Count(name, "fast-cnp", 1)
			}
			env.NodeEvent(&ev)
		}
		n, err := fastcnp.Attach(env.Net, sw, cfg, lhcnp.WithEvents(onEvent))
		if err != nil {
			return err
		}
		env.TapSwitch(sw, n)
		fns = append(fns, fastcnp.FunctionOf(n))
		nodes = append(nodes, n)
		if a := sw.Addr(); a.IsValid() {
			acl = append(acl, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	rc := fastcnp.ReceiverConfig{Enabled: p.RNIC, AccessList: acl, CodePoints: cfg.CodePoints}
	var recvs []*fastcnp.Receiver
	for _, h := range env.Net.Hosts() {
		rv, err := fastcnp.NewReceiver(env.Net, rc)
		if err != nil {
			return fmt.Errorf("host %s: %w", h.Name(), err)
		}
		env.TapHost(h, rv)
		recvs = append(recvs, rv)
		env.Classify(h, rv.SenderQP)
	}
	env.Signal("fast-cnp", false)
	env.CountFunctions(fns)
	counts := env.Counters()
	env.OnSummary(func(*report.Input) {
		fastcnp.AddReceiverCounters(counts, recvs)
		for _, n := range nodes {
			if c := n.Counters().NotIPv6; c > 0 {
				env.Warn("fast-cnp: %s: %d notifications not sent: Fast CNP is IPv6 only, and their source or the switch's address is IPv4", n.Switch().Name(), c)
			}
		}
	})
	return nil
}
