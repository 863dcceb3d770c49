// Package yang holds the lhcnp YANG modules (the *.yang files of this
// directory, the contract with every client) and embeds them, for code that
// needs what the generated schema in gen/ leaves out, such as the units of
// a leaf. It depends on nothing.
package yang

import "embed"

// Modules is the directory's *.yang files.
//
//go:embed *.yang
var Modules embed.FS
