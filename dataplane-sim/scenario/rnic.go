package scenario

// The dcqcn and nic blocks: the file's overrides of every RNIC's DCQCN
// reaction and notification points and of the RNIC itself. A field the
// file leaves out stays nil and keeps the network model's default.

import (
	"time"

	"go.yaml.in/yaml/v3"
)

func (l *loader) dcqcn(n *yaml.Node) {
	if n == nil {
		return
	}
	o := l.d.object(n, "dcqcn", "enabled", "g", "alpha_update_period", "initial_alpha", "rate_on_first_cnp",
		"min_dec_fac_percent", "min_rate", "gd", "rate_reduce_monitor_period", "clamp_target_rate",
		"clamp_target_after_time_inc", "time_reset", "byte_reset", "threshold", "max_rate", "rate_ai",
		"rate_hai", "cnp_interval", "cnp_prio", "profile", "alpha_per_cnp")
	if o == nil {
		return
	}
	p := &l.sc.DCQCN
	if fn := o.get("profile"); fn != nil {
		if s, ok := l.d.scalar(fn, o.field("profile")); ok {
			if s != DCQCNProfileNVIDIA && s != DCQCNProfilePaper {
				l.d.errAt(fn, o.field("profile"), "unknown profile %q (want %s or %s)", s, DCQCNProfileNVIDIA, DCQCNProfilePaper)
			} else {
				p.Profile = s
			}
		}
	}
	p.AlphaPerCNP = optBool(o, "alpha_per_cnp")
	p.Enabled = optBool(o, "enabled")
	p.G = optInt(o, "g", 0, 1024)
	p.AlphaUpdatePeriod = optDuration(o, "alpha_update_period", true)
	p.InitialAlpha = optInt(o, "initial_alpha", 0, 1024)
	p.RateOnFirstCNP = optRate(o, "rate_on_first_cnp", false)
	p.MinDecFacPercent = optInt(o, "min_dec_fac_percent", 0, 100)
	p.MinRate = optRate(o, "min_rate", true)
	p.GD = optInt(o, "gd", 0, 30)
	p.RateReduceMonitorPeriod = optDuration(o, "rate_reduce_monitor_period", false)
	p.ClampTargetRate = optBool(o, "clamp_target_rate")
	p.ClampTargetAfterTimeInc = optBool(o, "clamp_target_after_time_inc")
	p.TimeReset = optDuration(o, "time_reset", true)
	p.ByteReset = optSize(o, "byte_reset", false)
	p.Threshold = optInt(o, "threshold", 0, 1<<20)
	p.MaxRate = optRate(o, "max_rate", false)
	p.RateAI = optRate(o, "rate_ai", false)
	p.RateHAI = optRate(o, "rate_hai", false)
	p.CNPInterval = optDuration(o, "cnp_interval", false)
	p.CNPPrio = optInt(o, "cnp_prio", 0, 7)
}

// The RDMA payload per packet nic.mtu may give.
const (
	minMTU = 256
	maxMTU = 64 << 10
)

func (l *loader) nic(n *yaml.Node) {
	if n == nil {
		return
	}
	o := l.d.object(n, "nic", "mtu", "ack_every_packets", "loss_recovery", "local_ack_timeout")
	if o == nil {
		return
	}
	l.sc.NIC.MTU = optSize(o, "mtu", true)
	// RoCEv2's path MTUs are 256..4096 bytes of payload; the simulator
	// takes any size between (the reference simulator's 1000B) and, above
	// them, the coarse packets the family generator gives fast
	// bottlenecks (family.MTU: up to 64KiB at 400Gbit/s) to bound the
	// packets a run simulates. Below 256 B a packet is more header than
	// payload and no RoCE device sends it (a 1B MTU made 1-byte packets).
	if v := l.sc.NIC.MTU; v != nil && (*v < minMTU || *v > maxMTU) {
		l.d.errAt(o.get("mtu"), o.field("mtu"), "%v is outside %v..%v (RoCEv2's path MTUs are 256B..4KiB; above, the simulator's coarse packets)", *v, Size(minMTU), Size(maxMTU))
		l.sc.NIC.MTU = nil
	}
	l.sc.NIC.AckEveryPackets = optInt(o, "ack_every_packets", 0, 1<<20)
	if fn := o.get("loss_recovery"); fn != nil {
		if s, ok := l.d.scalar(fn, o.field("loss_recovery")); ok {
			if s != LossRecoveryNone && s != LossRecoveryGoBackN {
				l.d.errAt(fn, o.field("loss_recovery"), "unknown loss recovery %q (want %s or %s)", s, LossRecoveryNone, LossRecoveryGoBackN)
			} else {
				l.sc.NIC.LossRecovery = s
			}
		}
	}
	// IB's QP attribute timeout: 4.096us * 2^t; 0 (no timeout) is
	// refused, as go-back-N would never resend a lost tail.
	l.sc.NIC.LocalAckTimeout = optInt(o, "local_ack_timeout", 1, 31)
}

// opt* return a pointer to the value when the field is present and valid.

func optBool(o *object, key string) *bool {
	var v bool
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setBool(key, &v)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optInt(o *object, key string, lo, hi int64) *int {
	var v int
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setInt(key, &v, lo, hi)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optRate(o *object, key string, positive bool) *Rate {
	var v Rate
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setRate(key, &v, positive)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optSize(o *object, key string, positive bool) *Size {
	var v Size
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setSize(key, &v, positive)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optDuration(o *object, key string, positive bool) *time.Duration {
	var v time.Duration
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setDuration(key, &v, positive)
	return ptrIf(&v, len(o.d.errs) == n)
}

func ptrIf[T any](v *T, ok bool) *T {
	if !ok {
		return nil
	}
	return v
}
