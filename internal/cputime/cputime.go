// Package cputime reads the CPU time the process has used, so that
// benchmarks on a shared machine can report the work done apart from the
// wait for a core (b.ReportMetric next to the wall time).
//
// It depends on the standard library alone.
package cputime

import "time"

// Process returns the CPU time of the process, user and system, all
// threads (the GC's included); 0 where the platform does not tell.
func Process() time.Duration { return process() }
