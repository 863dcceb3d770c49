// Package scenarios builds the repository's scenario files into the
// binary: lhcnp's sim commands read a default file (one the command line
// did not name) from here when the working directory does not hold it,
// so that the defaults work outside the repository (docs/scenarios.md,
// "Default files"). It holds files only and must import nothing of the
// simulator.
package scenarios

import "embed"

// Files are this directory's scenario, family, CDF and evaluation files,
// under their paths here ("compare/mid-wan.yaml", "cdf/websearch.txt").
//
//go:embed *.yaml cdf checks compare dev fabric family refsim tuner
var Files embed.FS
