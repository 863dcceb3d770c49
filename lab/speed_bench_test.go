package lab

import (
	"syscall"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// BenchmarkLabEngine runs the lab's model as `lhcnp lab` runs it at its
// defaults (the lab topology's three switches, the repeated bursts every
// 4 s, web-search at 2 % of each sender's link, finished flows retired)
// as fast as the engine goes, for 40 simulated seconds from the start
// (the windows overlap from the second one on). sim-s/cpu-s is the
// highest speed one core gives the engine alone: the paced engine keeps
// up only below it, less what the publishers, the collector, the tuner
// and PostgreSQL take of the machine (docs/lab.md, "Speed"). CPU time,
// not wall time, so other work on the machine hardly changes it.
func BenchmarkLabEngine(b *testing.B) {
	const simulated = 40 * time.Second
	var cpu time.Duration
	var events uint64
	for b.Loop() {
		loop, err := NewLoop(labScenario, Traffic{Period: 4 * time.Second, WebSearchLoad: 0.02, RetireFinished: true})
		if err != nil {
			b.Fatal(err)
		}
		n := labNetwork(b, loop)
		loop.Install(n, func(err error) { b.Error(err) })
		before := cpuTime()
		n.Sim.Run(engine.FromDuration(simulated))
		cpu += cpuTime() - before
		events += n.Sim.Events()
	}
	runs := float64(b.N)
	b.ReportMetric(simulated.Seconds()*runs/cpu.Seconds(), "sim-s/cpu-s")
	b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(float64(events)/runs/simulated.Seconds(), "events/sim-s")
}

// cpuTime is the process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
