package dataplane

import (
	"net/netip"

	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/rateadvice"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// RateAdviceConfig translates the Rate Advice leaves (global
// rate-advice-enabled, /lhcnp/rate-advice) into the node's configuration;
// the shared leaves (source address, CNP DSCP, code points) come from lc.
// Errors name the YANG path.
func RateAdviceConfig(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config) (rateadvice.Config, error) {
	c := rateadvice.DefaultConfig()
	c.SourceAddress = lc.SourceAddress
	c.DSCP = lc.CNPDSCP
	c.CodePoints = lc.CodePoints
	if l == nil {
		return c, nil
	}
	c.Enabled = l.GetGlobal().GetConfig().GetRateAdviceEnabled()
	if r := l.GetRateAdvice().GetConfig(); r != nil {
		setBool(&c.QueueBased, r.QueueBased)
		if r.MinAdviceInterval != nil {
			c.MinAdviceInterval = usec(*r.MinAdviceInterval)
		}
	}
	if ps := l.GetRateAdvice().GetPolicies(); ps != nil {
		for _, name := range sortedKeys(ps.Policy) {
			at := "/lhcnp/rate-advice/policies/policy[name=" + name + "]/config"
			pc := ps.Policy[name].GetConfig()
			p := rateadvice.Policy{Name: name, Precedence: 100, RateMbps: pc.GetRate(), DstQP: pc.GetDestinationQp()}
			if pc.Precedence != nil {
				p.Precedence = *pc.Precedence
			}
			if p.RateMbps == 0 {
				return c, invalid(at+"/rate", "a policy needs its rate")
			}
			for _, f := range []struct {
				leaf string
				v    *string
				dst  *netip.Prefix
			}{{"source-prefix", pc.SourcePrefix, &p.Src}, {"destination-prefix", pc.DestinationPrefix, &p.Dst}} {
				if f.v == nil {
					continue
				}
				pr, err := netip.ParsePrefix(*f.v)
				if err != nil {
					return c, invalid(at+"/"+f.leaf, "%q: %v", *f.v, err)
				}
				*f.dst = pr.Masked()
			}
			c.Policies = append(c.Policies, p)
		}
	}
	if err := rateadvice.CheckOpcode(c.CodePoints.RateAdviceOpcode); err != nil {
		return c, invalid(codePointsPath+"/rate-advice-opcode", "%v", err)
	}
	if err := c.Validate(); err != nil {
		return c, invalid("/lhcnp/rate-advice", "%v", err)
	}
	return c, nil
}

func init() {
	register(mechanismKind{
		name:   "rate-advice",
		idle:   rateadvice.State{},
		beside: true,
		translate: func(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, _ *Ports) (any, bool, error) {
			c, err := RateAdviceConfig(l, lc)
			return c, c.Enabled, err
		},
		off: func(cfg any) any {
			c := cfg.(rateadvice.Config)
			c.Enabled = false
			return c
		},
		create: func(node *lhcnp.Node, cfg any) (mechanism.Function, error) {
			return rateadvice.NewFunction(node.Switch(), cfg.(rateadvice.Config))
		},
		state: func(root *oc.Root, st, cfg any, v stateEnv) {
			rateAdviceState(root, st.(rateadvice.State), cfg.(rateadvice.Config), v.ports, v.wallNS)
		},
	})
}

// rateAdviceState writes the configuration as configured (c), the
// counters, the flows' advice and each queue's rate-advice-sent (the
// node's monotonic per-queue count, not a sum of the per-flow counts,
// which age out) into the state tree. The messages are switch-originated
// notifications for congestion on the port: they count in its
// notifications-sent and the node's.
func rateAdviceState(root *oc.Root, st rateadvice.State, c rateadvice.Config, ports *Ports, wallNS func(engine.Time) uint64) {
	for _, p := range st.Ports {
		var sent int64
		for q, n := range p.Queues {
			setQueueCount(root, ports, p.Port, uint8(q), n, func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64) {
				k.RateAdviceSent = n
			})
			sent += n
		}
		addNotificationsSent(root, ports, p.Port, sent)
	}
	l := root.GetOrCreateLhcnp()
	l.GetOrCreateGlobal().GetOrCreateState().RateAdviceEnabled = ygot.Bool(c.Enabled)
	ra := l.GetOrCreateRateAdvice()
	s := ra.GetOrCreateState()
	s.QueueBased = ygot.Bool(c.QueueBased)
	s.MinAdviceInterval = ygot.Uint32(uint32(c.MinAdviceInterval / engine.Microsecond))
	k := s.GetOrCreateCounters()
	k.MessagesSent = ygot.Uint64(uint64(st.Counters.Sent))
	k.PolicyAdvice = ygot.Uint64(uint64(st.Counters.PolicyAdvice))
	k.QueueAdvice = ygot.Uint64(uint64(st.Counters.QueueAdvice))
	for _, p := range c.Policies {
		ps := ra.GetOrCreatePolicies().GetOrCreatePolicy(p.Name).GetOrCreateState()
		ps.Name, ps.Precedence, ps.Rate = ygot.String(p.Name), ygot.Uint32(p.Precedence), ygot.Uint32(p.RateMbps)
		if p.Src.IsValid() {
			ps.SourcePrefix = ygot.String(p.Src.String())
		}
		if p.Dst.IsValid() {
			ps.DestinationPrefix = ygot.String(p.Dst.String())
		}
		if p.DstQP != 0 {
			ps.DestinationQp = ygot.Uint32(p.DstQP)
		}
	}
	for _, f := range st.Flows {
		if f.Sent == 0 {
			continue
		}
		fs := ra.GetOrCreateFlows().GetOrCreateFlow(f.Src.String(), f.Dst.String(), f.SrcQP, f.DstQP).GetOrCreateState()
		fs.SourceAddress, fs.DestinationAddress = ygot.String(f.Src.String()), ygot.String(f.Dst.String())
		fs.SourceQp, fs.DestinationQp = ygot.Uint32(f.SrcQP), ygot.Uint32(f.DstQP)
		fs.AdvisedRate = ygot.Uint32(f.RateMbps)
		fs.Basis = oc.LhcnpTypes_RateAdviceBasis_QUEUE_STATE
		if f.Basis == rateadvice.BasisPolicy {
			fs.Basis = oc.LhcnpTypes_RateAdviceBasis_POLICY
			fs.Policy = ygot.String(f.Policy)
		}
		fs.LastSentTime = ygot.Uint64(wallNS(f.LastSent))
		fs.GetOrCreateCounters().MessagesSent = ygot.Uint64(uint64(f.Sent))
	}
}
