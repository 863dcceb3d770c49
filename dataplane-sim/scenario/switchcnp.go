package scenario

// The params of switch-cnp (the Data Center Fast CNP white paper's
// practice, run by package switchcnp): defaults and reader.

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultSwitchCNP returns the switch-cnp defaults: the package's
// (switchcnp.DefaultConfig, TestParamDefaultsAreTheNodes) but a
// flow_aging of 1 s.
func DefaultSwitchCNP() SwitchCNP {
	return SwitchCNP{DSCP: 48, DelayThreshold: 20 * time.Microsecond, BufferShare: 1, CNPInterval: 50 * time.Microsecond,
		FlowAging: time.Second, MaxEntries: 65536}
}

// switchCNPParams reads the typed parameters of switch-cnp.
func (l *loader) switchCNPParams(n *yaml.Node, path string, p *SwitchCNP) {
	if n == nil {
		return
	}
	o := l.d.object(n, path, "dscp", "delay_threshold", "buffer_share", "cnp_interval", "flow_aging", "max_entries")
	if o == nil {
		return
	}
	o.setInt("dscp", &p.DSCP, 0, 63)
	o.setDuration("delay_threshold", &p.DelayThreshold, true)
	o.setInt("buffer_share", &p.BufferShare, 1, 100)
	o.setDuration("cnp_interval", &p.CNPInterval, true)
	o.setDuration("flow_aging", &p.FlowAging, true)
	o.setInt("max_entries", &p.MaxEntries, 1, 1<<24)
}
