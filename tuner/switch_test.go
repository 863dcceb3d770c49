package tuner

import (
	"context"
	"net"
	"os"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// testSwitch serves the example switch (examples/switch.yaml: n1 of the
// §7-shaped scenario, interface wan0) on loopback with its real dataplane
// binding, the engine not running: a Set reaches the node and the state
// published afterwards shows its effect (effective-kmax). opts add to the
// target's options (interceptors that make it misbehave).
func testSwitch(t *testing.T, opts ...service.Option) (addr string, pub *dataplane.Publisher) {
	t.Helper()
	ctx := context.Background()
	sc, err := scenario.LoadFile("../examples/switch-scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.Build(sc, "n1", dataplane.BuildOptions{Interfaces: map[string]string{"wan0": "wan"}})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	st := store.New()
	b := dataplane.NewBinding(sw.Sim, sw.Node, sw.Ports)
	pub = dataplane.NewPublisher(sch, st, b)
	h := service.NewHandler(sch, st, b, service.WithStatePublisher(pub))
	data, err := os.ReadFile("../examples/switch.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LoadJSON(ctx, data); err != nil {
		t.Fatal(err)
	}
	// Subscribe as lhcnp switch serves it (server/fabric): the tuner
	// watches the queues' configuration around its Set.
	sub := subscribe.New(st, subscribe.WithOrigins(schema.Origin, schema.OpenConfigOrigin),
		subscribe.WithPathRewrite(schema.StripModules),
		subscribe.WithPathValidator(func(p *gnmi.Path) error { _, err := sch.Resolve(p); return err }))
	srv, err := service.New(append([]service.Option{service.WithInsecure(), service.WithAuth(auth.New(nil)),
		service.WithCapabilities(h), service.WithGet(h), service.WithSet(h), service.WithSubscribe(sub)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), pub
}
