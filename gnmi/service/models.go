package service

import (
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
)

// CheckModels is Get's check of use_models (gNMI 2.6: every model named must
// be one the target serves, at the version given if any), for the target's
// Subscribe (subscribe.WithModelValidator), so that both refuse the same
// lists with the same message.
func CheckModels(models []*gnmi.ModelData) error { return checkModels(models) }

// SubscribeOptions are the options every Subscribe server over sch's data
// takes (a switch's, the collector's northbound, their tests): the origins,
// the paths as the schema reads them, use_models as Get checks it, and the
// two JSON encodings. Callers add their clock, minimum interval and the like.
func SubscribeOptions(sch *schema.Schema) []subscribe.Option {
	return []subscribe.Option{
		subscribe.WithOrigins(schema.Origin, schema.OpenConfigOrigin),
		subscribe.WithPathRewrite(schema.StripModules),
		subscribe.WithPathValidator(func(p *gnmi.Path) error { _, err := sch.Resolve(p); return err }),
		// use_models as Get answers it (gNMI 2.6, 3.5.1.2).
		subscribe.WithModelValidator(CheckModels),
		subscribe.WithEncoder(gnmi.Encoding_JSON_IETF, sch.ValueEncoder(gnmi.Encoding_JSON_IETF)),
		subscribe.WithEncoder(gnmi.Encoding_JSON, sch.ValueEncoder(gnmi.Encoding_JSON)),
	}
}
