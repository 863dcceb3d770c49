// Package sim runs a scenario: it has package build turn a
// scenario.Scenario into the network models (package netsim) on a
// deterministic engine, as a switch's gNMI target does, installs the
// mechanism under test, schedules the timed events and the sampling, runs to
// the scenario's duration and writes what package report produces (CSV time
// series, summary.json, PNG plots).
//
// Mechanisms beyond DCQCN plug in through package install: a kind's
// installer is looked up among those registered there (this package
// registers the kinds whose params package scenario holds; any other
// kind's package registers itself with install.Register) and those passed
// with WithMechanism; the runner never switches on a mechanism's name. An
// installer works on an install.Env (Env here), whose runner side this
// package implements (the meter, counters.csv, summary.json), and counts
// its switches' functions through mechanism.Function.Counters.
//
// The package does not print. Progress goes to a callback (WithProgress);
// the command decides how to show it.
package sim
