// Package gen holds the Go code generated from the YANG modules in ../yang.
// Nothing under gen/ is edited by hand: change the YANG and run
//
//	go generate ./gen/...
//
// The generator is ygnmi's, pinned in go.mod as a Go tool dependency; it
// embeds ygot's GoStruct generator (same ygot version) and writes
//
//   - oc: ygot GoStructs of the schema (getters, setters, Validate,
//     PopulateDefaults, the JSON schema tree behind oc.Schema / oc.Unmarshal),
//   - oc/ocpath: ygnmi path structs, starting at ocpath.Root().
//
// Paths are not compressed: the Go names follow the YANG paths one to one,
// config and state are separate structs, and every leaf of a config container
// is a ygnmi ConfigQuery (usable with ygnmi.Replace/Update) while state leaves
// are read-only queries. The gNMI target keeps intended config and observed
// state apart this way, and JSON_IETF round-trips exactly.
//
// scripts/check-gen.sh regenerates into a temporary copy and fails when the
// result differs from what is checked in.
package gen

//go:generate rm -rf oc
//go:generate go tool ygnmi generator --compress_paths=false --split_top_level_packages=false --base_package_path=github.com/lhcnp/lhcnp/gen/oc --output_dir=oc --paths=../yang ../yang/lhcnp.yang ../yang/lhcnp-types.yang
//go:generate go run ./internal/pruneimports oc oc/ocpath
