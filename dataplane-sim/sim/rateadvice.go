package sim

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/rateadvice"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// RateAdviceConfig maps the scenario's rate-advice parameters onto a
// node's configuration (docs/scenarios.md).
func RateAdviceConfig(p scenario.RateAdvice) rateadvice.Config {
	c := rateadvice.DefaultConfig()
	c.Enabled = true
	c.QueueBased = p.QueueBased
	if p.PolicyRate > 0 {
		c.Policies = []rateadvice.Policy{{Name: "policy_rate", RateMbps: uint32(int64(p.PolicyRate) / 1_000_000)}}
	}
	c.MinAdviceInterval = engine.FromDuration(p.Interval)
	c.DrainInterval = engine.FromDuration(p.DrainInterval)
	c.ChangePercent = p.ChangePercent
	return c
}

func init() { install.RegisterCutInstaller(scenario.MechanismRateAdvice, installRateAdvice) }

// installRateAdvice puts a Rate Advice node (package rateadvice) on every
// switch of the block, beside any other block's observer there, and a
// Rate Advice receiver on every host, trusting the nodes' addresses.
// Messages count as sent_rate-advice.
func installRateAdvice(env *Env) error {
	p := env.Mech.RateAdvice()
	cfg := RateAdviceConfig(p)
	var fns []mechanism.Function
	var acl []netip.Prefix
	for _, sw := range env.Nodes {
		n, err := rateadvice.New(env.Net, sw, cfg)
		if err != nil {
			return err
		}
		name := sw.Name()
		n.OnSent(func(rateadvice.FlowAdvice) { env.Count(name, "rate-advice", 1) })
		env.TapSwitch(sw, n)
		fns = append(fns, rateadvice.FunctionOf(n))
		if a := sw.Addr(); a.IsValid() {
			acl = append(acl, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	rc := rateadvice.ReceiverConfig{Capable: p.Capable == "all", AccessList: acl, CodePoints: cfg.CodePoints}
	var recvs []*rateadvice.Receiver
	for _, h := range env.Net.Hosts() {
		rv, err := rateadvice.NewReceiver(h, rc)
		if err != nil {
			return fmt.Errorf("host %s: %w", h.Name(), err)
		}
		env.TapHost(h, rv)
		recvs = append(recvs, rv)
	}
	// The functions (FunctionOf) have no receivers of their own: the
	// hosts' are counted once, here.
	env.CountFunctions(fns)
	counts := env.Counters()
	env.OnSummary(func(*report.Input) { rateadvice.AddReceiverCounters(counts, recvs) })
	return nil
}
