package sim

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// HostConfig is the RNIC configuration of every host of sc, as the batch
// runner builds it (DCQCN and NIC overrides over the model's defaults).
// The gNMI fabric builds its hosts with it, so that a scenario runs the
// same there and here.
func HostConfig(sc *scenario.Scenario) (netsim.HostConfig, error) { return hostConfig(sc) }

// PortConfig is the configuration of a switch egress port with queue q
// and the given buffer, as the batch runner builds it.
func PortConfig(q scenario.Queue, bufferBytes int64) netsim.PortConfig {
	return portConfig(q, bufferBytes)
}
