package scenario

// The params of switch-cnp (the Data Center Fast CNP white paper's
// practice, run by package switchcnp): defaults and reader.

import "time"

// DefaultSwitchCNP returns the switch-cnp defaults: the package's
// (switchcnp.DefaultConfig, TestParamDefaultsAreTheNodes) but a
// flow_aging of 1 s.
func DefaultSwitchCNP() SwitchCNP {
	return SwitchCNP{DSCP: 48, DelayThreshold: 20 * time.Microsecond, BufferShare: 1, CNPInterval: 50 * time.Microsecond,
		FlowAging: time.Second, MaxEntries: 65536}
}

func init() { RegisterMechanism(MechanismSpec{Kind: MechanismSwitchCNP, Params: switchCNPParams}) }

// switchCNPParams reads the typed parameters of switch-cnp.
func switchCNPParams(b ParamsBlock) any {
	p := DefaultSwitchCNP()
	if !b.Keys("dscp", "delay_threshold", "buffer_share", "cnp_interval", "flow_aging", "max_entries") {
		return p
	}
	b.Int("dscp", &p.DSCP, 0, 63)
	b.Duration("delay_threshold", &p.DelayThreshold, true)
	b.Int("buffer_share", &p.BufferShare, 1, 100)
	b.Duration("cnp_interval", &p.CNPInterval, true)
	b.Duration("flow_aging", &p.FlowAging, true)
	b.Int("max_entries", &p.MaxEntries, 1, 1<<24)
	return p
}
