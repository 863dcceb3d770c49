package scenario

// The params of rate-advice (SCONE Rate Advice, run by package rateadvice
// on the nodes and the RNICs): defaults and reader.

import "time"

// DefaultRateAdvice returns the rate-advice defaults (docs/scenarios.md):
// the package's (rateadvice.DefaultConfig, TestParamDefaultsAreTheNodes),
// every RNIC capable.
func DefaultRateAdvice() RateAdvice {
	return RateAdvice{QueueBased: true, Interval: 100 * time.Microsecond, DrainInterval: time.Millisecond,
		ChangePercent: 10, Capable: "all"}
}

func init() {
	RegisterMechanism(MechanismSpec{Kind: MechanismRateAdvice, Beside: true, Params: rateAdviceParams})
}

// rateAdviceParams reads the typed parameters of rate-advice.
func rateAdviceParams(b ParamsBlock) any {
	p := DefaultRateAdvice()
	if !b.Keys("queue_based", "policy_rate", "interval", "drain_interval", "change_percent", "capable") {
		return p
	}
	b.Bool("queue_based", &p.QueueBased)
	b.Rate("policy_rate", &p.PolicyRate, false)
	b.Duration("interval", &p.Interval, true)
	b.Duration("drain_interval", &p.DrainInterval, true)
	b.Int("change_percent", &p.ChangePercent, 0, 100)
	b.OneOf("capable", &p.Capable, "value", "all", "none")
	if p.PolicyRate > 0 && p.PolicyRate < Mbps {
		b.Errorf("policy_rate", "%v is below 1Mbps (advice is in Mb/s)", p.PolicyRate)
	}
	if !p.QueueBased && p.PolicyRate == 0 {
		b.Errorf("", "queue_based is false and there is no policy_rate: nothing would be advised")
	}
	return p
}
