// Package scenario reads a simulation scenario from YAML and returns it
// typed and validated: topology (hosts, switches, links, routes), the
// mechanism under test and its parameters, the traffic (named flows,
// incasts, flows drawn from a size CDF) and the timed events.
//
// Every mistake in a file is reported as an *Error that names the file, the
// line and column, and the field path (for example
// "traffic.flows[2].src"), so that an experiment fails at load time and
// not half-way through a run. Quantities are written with their units; the
// grammar is in units.go and in docs/scenarios.md.
//
// Load does all the work that depends only on the file: it fills defaults,
// expands incasts and CDF traffic into concrete flows (deterministically,
// from the seeds), and computes a route for every flow. The result holds
// plain values and no references to yaml nodes.
//
// The package depends on the standard library and go.yaml.in/yaml/v3 only. It
// must not import the engine or the network models: the runner in package
// sim translates a Scenario into them.
package scenario
