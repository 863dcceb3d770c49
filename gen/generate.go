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
//   - oc/ocpath: ygnmi path structs, starting at ocpath.Root(),
//   - client/oc and client/oc/ocpath: the same schema with compressed paths,
//     for gNMI clients (the tuner).
//
// In oc, paths are not compressed: the Go names follow the YANG paths one to one,
// config and state are separate structs, and every leaf of a config container
// is a ygnmi ConfigQuery (usable with ygnmi.Replace/Update) while state leaves
// are read-only queries. The gNMI target keeps intended config and observed
// state apart this way, and JSON_IETF round-trips exactly.
//
// The client API is generated with --compress_paths=true, the style
// OpenConfig clients type: the config/state containers and the surrounding
// list containers are elided, one GoStruct holds a list entry's config and
// state, and a leaf's path has State() and Config() queries, as in
// ocpath.Root().Lhcnp().Interface("wan0").Queue(3).Alpha().Config(). The gNMI
// paths on the wire are the same as the uncompressed API's (the compressed
// Config() query is the config/ leaf's path). It exists because it compiles
// in a third of the time: every uncompressed path type embeds the generic
// ygnmi.ConfigQuery or WildcardQuery, whose promoted methods the compiler
// generates for each of its 780 types (42 661 functions, 15 s alone on the
// critical path of a cold build of cmd/lhcnp); the compressed tree has 498
// types and 15 545 functions. Only the tuner, which sets a handful of
// leaves, needs a path API in the binary; the server works on the
// uncompressed GoStructs of oc, and tests may use either API.
//
// scripts/check-gen.sh regenerates into a temporary copy and fails when the
// result differs from what is checked in.
package gen

//go:generate rm -rf oc
//go:generate go tool ygnmi generator --compress_paths=false --split_top_level_packages=false --base_package_path=github.com/lhcnp/lhcnp/gen/oc --output_dir=oc --paths=../yang ../yang/lhcnp.yang ../yang/lhcnp-types.yang
//go:generate go run ./internal/pruneimports oc oc/ocpath
//go:generate rm -rf client
//go:generate go tool ygnmi generator --compress_paths=true --split_top_level_packages=false --base_package_path=github.com/lhcnp/lhcnp/gen/client/oc --output_dir=client/oc --paths=../yang ../yang/lhcnp.yang ../yang/lhcnp-types.yang
//go:generate go run ./internal/pruneimports client/oc client/oc/ocpath
