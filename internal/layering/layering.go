// Package layering holds the import rules of docs/architecture.md's picture
// (which room may import which), checked by its test over every package of
// the module. It has no code: the rules are the test's table.
package layering
