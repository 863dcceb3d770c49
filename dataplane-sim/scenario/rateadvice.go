package scenario

// The params of rate-advice (SCONE Rate Advice, run by package rateadvice
// on the nodes and the RNICs): defaults and reader.

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultRateAdvice returns the rate-advice defaults (docs/scenarios.md):
// the package's (rateadvice.DefaultConfig, TestParamDefaultsAreTheNodes),
// every RNIC capable.
func DefaultRateAdvice() RateAdvice {
	return RateAdvice{QueueBased: true, Interval: 100 * time.Microsecond, DrainInterval: time.Millisecond,
		ChangePercent: 10, Capable: "all"}
}

// rateAdviceParams reads the typed parameters of rate-advice.
func (l *loader) rateAdviceParams(n *yaml.Node, path string, p *RateAdvice) {
	if n == nil {
		return
	}
	o := l.d.object(n, path, "queue_based", "policy_rate", "interval", "drain_interval", "change_percent", "capable")
	if o == nil {
		return
	}
	o.setBool("queue_based", &p.QueueBased)
	o.setRate("policy_rate", &p.PolicyRate, false)
	o.setDuration("interval", &p.Interval, true)
	o.setDuration("drain_interval", &p.DrainInterval, true)
	o.setInt("change_percent", &p.ChangePercent, 0, 100)
	if cn := o.get("capable"); cn != nil {
		if s, ok := l.d.scalar(cn, o.field("capable")); ok {
			if s != "all" && s != "none" {
				l.d.errAt(cn, o.field("capable"), "unknown value %q (want all or none)", s)
			} else {
				p.Capable = s
			}
		}
	}
	if p.PolicyRate > 0 && p.PolicyRate < Mbps {
		l.d.errAt(o.get("policy_rate"), o.field("policy_rate"), "%v is below 1Mbps (advice is in Mb/s)", p.PolicyRate)
	}
	if !p.QueueBased && p.PolicyRate == 0 {
		l.d.errAt(o.node, path, "queue_based is false and there is no policy_rate: nothing would be advised")
	}
}
