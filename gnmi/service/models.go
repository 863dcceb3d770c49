package service

import "github.com/openconfig/gnmi/proto/gnmi"

// CheckModels is Get's check of use_models (gNMI 2.6: every model named must
// be one the target serves, at the version given if any), for the target's
// Subscribe (subscribe.WithModelValidator), so that both refuse the same
// lists with the same message.
func CheckModels(models []*gnmi.ModelData) error { return checkModels(models) }
