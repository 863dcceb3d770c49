package refsim

import "embed"

// StoredFiles are the stored reference runs of testdata/ref, under their paths
// here ("testdata/ref/incast-2-pfc/run1.json"), built into the binaries
// that import refsim: lhcnp sim compare --markdown reads its default
// --validation from here outside the repository (docs/scenarios.md,
// "Default files").
//
//go:embed testdata/ref
var StoredFiles embed.FS
