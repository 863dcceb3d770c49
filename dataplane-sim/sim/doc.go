// Package sim runs a scenario: it builds the network models (package
// netsim) on a deterministic engine from a scenario.Scenario, installs the
// mechanism under test, schedules the timed events and the sampling, runs to
// the scenario's duration and writes what package report produces (CSV time
// series, summary.json, PNG plots).
//
// Mechanisms beyond DCQCN plug in through the Mechanism interface, looked
// up by kind among the defaults and those passed with WithMechanism; the
// runner never switches on a mechanism's name.
//
// The package does not print. Progress goes to a callback (WithProgress);
// the command decides how to show it.
package sim
