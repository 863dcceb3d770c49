// Package engine is lhcnp's discrete-event simulation core: simulated time in
// integer nanoseconds (Time), a queue of value-typed events ordered by
// (time, insertion order), a seeded PCG random source, and two ways to drive
// it: Run, as fast as possible (experiments, tests, benchmarks), and
// RunRealtime, paced to the wall clock at a chosen speed (the lab and the gNMI
// target), from its start or from an epoch several processes share
// (SetEpoch).
//
// The engine only orders time; event sources own their state. Following
// htsim, a model object (a link, a port, a queue pair) keeps at most one or two
// pending events and multiplexes its timers through the kind and arg of
// Handler.Handle; there is no cancel, handlers skip events they have
// superseded (compare a generation number carried in arg).
//
// Never, the "no deadline" time, is a time no event reaches: an event at
// Never (At, AtID, AtKey, a message, a global event; After with a delay
// past Never lands there too) is held but never runs. The periodic
// instants of Every, EveryGlobal and EveryPartition saturate the same way:
// the one after the last before Never is Never, and never comes (start +
// n·period wrapped round to a time in the past). Run(Never) runs
// every event before it and stops there, Step does not take it, NextAt
// reports Never for it as for an empty queue, and Pending counts it, as
// it counts superseded events: it holds its place in the queue until the
// Sim is dropped. The drivers bound their runs at Never-1 once per call,
// so the pop path has no test for it (TestEventAtNeverNeverRuns,
// TestGroupEventAtNever, TestEveryNearNever).
//
// Determinism: the same model built the same way with the same seed processes
// the same events in the same order, so every output derived from it is
// byte-identical. Nothing in this package reads the wall clock except
// RunRealtime and Do under RunRealtime, which by definition depend on it.
//
// Concurrency: one goroutine drives a Sim. Other goroutines use Do to run a
// function between events (apply configuration, read state into a snapshot)
// and Published to pick up snapshots the simulation publishes from an Every
// callback. Both are clean under the race detector.
//
// Parallel runs: a Group cuts a model into partitions, each an ordinary Sim
// with its own queue and PCG (PartitionSeed), and runs them side by side in
// windows of the lookahead (the least delay of anything that crosses
// partitions), behind a barrier. What crosses is a message (Group.Send),
// delivered before the window its time falls in, in the order (time,
// source partition, source sequence); global events (AtGlobal) run at a
// barrier with every partition stopped, and partition instants
// (EveryPartition: samplers) run in every partition at the same times
// without ending a window, read at the barriers (OnBarrier). Windows, messages and their order
// are functions of the model only, so every partition runs the same events
// in the same order for every thread count. A Group of one partition is its
// Sim: Run is Sim.Run.
//
// The package depends on the standard library only.
package engine
