package service_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// TestCommitConfirmedRealNode: with the simulator's Long-haul CNP node as
// the dataplane, the configuration the node runs after an automatic
// rollback is exactly the one it ran before the commit, and so is the
// ECN marking it programmed into its ports.
func TestCommitConfirmedRealNode(t *testing.T) {
	sc, err := scenario.LoadFile("../../examples/switch-scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.Build(sc, "n1", dataplane.BuildOptions{Interfaces: map[string]string{"wan0": "wan"}})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(epoch)
	st := store.New(store.WithClock(clk))
	b := dataplane.NewBinding(sw.Sim, sw.Node, sw.Ports)
	events := make(chan service.CommitEvent, 8)
	h := service.NewHandler(testSchema, st, b, service.WithHandlerClock(clk),
		service.WithStatePublisher(dataplane.NewPublisher(testSchema, st, b)),
		service.WithCommitObserver(func(e service.CommitEvent) { events <- e }))
	cfg, err := os.ReadFile("../../examples/switch.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LoadJSON(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	srv, err := service.New(service.WithInsecure(), service.WithSet(h), service.WithGet(h))
	if err != nil {
		t.Fatal(err)
	}
	c := servicetest.Client(t, srv)

	running := func() (lhcnp.Config, string) {
		var cfg lhcnp.Config
		var ecn string
		sw.Sim.Do(func() {
			cfg = sw.Node.Config()
			for _, p := range sw.Switch.Ports() {
				ecn += fmt.Sprintf("%+v\n", p.Config())
			}
		})
		return cfg, ecn
	}
	before, ecnBefore := running()
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/config"
	if _, err := c.Set(ctx(t), commitReq("c1", time.Minute,
		upd(q+"/alpha", jsonv(`0.25`)), upd(q+"/v-growth", jsonv(`2500000000`)))); err != nil {
		t.Fatal(err)
	}
	<-events
	during, ecnDuring := running()
	if reflect.DeepEqual(before, during) || ecnBefore == ecnDuring {
		t.Fatal("the commit did not change the node's configuration and marking")
	}
	clk.Advance(time.Minute)
	if ev := <-events; ev.Kind != "rollback" {
		t.Fatalf("event %+v, want rollback", ev)
	}
	after, ecnAfter := running()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("node configuration after rollback:\n%+v\nbefore the commit:\n%+v", after, before)
	}
	if ecnAfter != ecnBefore {
		t.Errorf("port marking after rollback:\n%s\nbefore:\n%s", ecnAfter, ecnBefore)
	}
	resp, err := c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/state/effective-kmax")}, Encoding: gnmi.Encoding_PROTO})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetNotification()[0].GetUpdate()[0].GetVal().GetUintVal(); got != 12_500_000 {
		t.Errorf("effective-kmax after rollback %d, want 12500000 (alpha 1 again)", got)
	}
}
