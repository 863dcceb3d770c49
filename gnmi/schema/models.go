package schema

import "github.com/openconfig/gnmi/proto/gnmi"

// The modules the target serves, as Capabilities reports them. The module
// has no openconfig-version, so the version is its latest revision date;
// TestModelsMatchYANG checks these against yang/.
const (
	ModuleName      = "lhcnp"
	TypesModuleName = "lhcnp-types"
	Organization    = "The lhcnp project"
	Revision        = "2026-12-07"
)

// Models returns the ModelData of every module of the schema.
func Models() []*gnmi.ModelData {
	return []*gnmi.ModelData{
		{Name: ModuleName, Organization: Organization, Version: Revision},
		{Name: TypesModuleName, Organization: Organization, Version: Revision},
	}
}

// Encodings are the encodings the target serves, in order of preference.
func Encodings() []gnmi.Encoding {
	return []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON, gnmi.Encoding_PROTO}
}
