// Package report records what a simulation run measured and writes it out:
// time series as CSV (one file per family: queues, rates, counters), a
// summary as JSON and plots as PNG.
//
// Recording is columnar and append-only: a sample costs three slice
// appends, so sampling every few microseconds of simulated time stays cheap.
// Output is deterministic: rows come out in the order they were recorded,
// JSON keys in a fixed order and floats rounded to six decimals, so two runs
// of the same scenario with the same seed give byte-identical CSV and JSON.
// PNG plots are deterministic in practice (same build, same fonts) but are
// not part of that guarantee.
//
// The package knows nothing of the network models or the engine: the runner
// (package sim) hands it plain numbers. It depends on the standard library
// and gonum.org/v1/plot (for the PNGs).
package report
