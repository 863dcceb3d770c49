package dataplane_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// lineConfig enables Long-haul CNP (RoCEv2 format) on n1 with thresholds no
// queue of the test reaches: explicit K_max 50 MB, V_growth 1 PB/s, V_ecn
// 100 %.
const lineConfig = `{"lhcnp:lhcnp": {
  "global": {
    "config": {"enabled": true, "long-haul-cnp-rocev2": true},
    "rocev2-receivers": {"receiver": [{"prefix": "10.0.0.0/8", "config": {"prefix": "10.0.0.0/8"}}]}
  },
  "interfaces": {"interface": [{"name": "wan", "config": {"name": "wan", "rtt-est": 2000},
    "queues": {"queue": [{"id": 0, "config": {"id": 0, "kmax-mode": "EXPLICIT", "kmax": "50000000",
      "v-growth": "1000000000000000", "v-ecn": "100"}}]}}]}
}}`

type rig struct {
	sw  *dataplane.Switch
	st  *store.Store
	pub *dataplane.Publisher
	b   *dataplane.Binding
	c   gnmi.GNMIClient
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigFrom(t, "testdata/line.yaml", lineConfig)
}

// newRigFrom serves switch n1 of the scenario file with the initial
// configuration config (JSON_IETF), its binding made with opts.
func newRigFrom(t testing.TB, file, config string, opts ...dataplane.BindingOption) *rig {
	t.Helper()
	return newRigs(t, file, map[string]string{"n1": config}, opts...)["n1"]
}

// newRigs serves the switches of the scenario file that configs names,
// each with its initial configuration (JSON_IETF) and its own target, on
// one engine (a rig's run advances them all and publishes its own state),
// each binding made with opts.
func newRigs(t testing.TB, file string, configs map[string]string, opts ...dataplane.BindingOption) map[string]*rig {
	t.Helper()
	return newRigsWith(t, file, configs, nil, opts...)
}

// newRigsWith is newRigs with each target's handler made with hopts.
func newRigsWith(t testing.TB, file string, configs map[string]string, hopts []service.HandlerOption, opts ...dataplane.BindingOption) map[string]*rig {
	t.Helper()
	sc, err := scenario.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var served []dataplane.Served
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		served = append(served, dataplane.Served{Name: name})
	}
	nw, err := dataplane.BuildNetwork(sc, served, dataplane.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	rigs := map[string]*rig{}
	for i, sw := range nw.Switches {
		st := store.New()
		b := dataplane.NewBinding(sw.Sim, sw.Node, sw.Ports, opts...)
		pub := dataplane.NewPublisher(s, st, b)
		h := service.NewHandler(s, st, b, append([]service.HandlerOption{service.WithStatePublisher(pub)}, hopts...)...)
		if err := h.LoadJSON(context.Background(), []byte(configs[served[i].Name])); err != nil {
			t.Fatalf("%s: initial config: %v", served[i].Name, err)
		}
		srv, err := service.New(service.WithInsecure(), service.WithGet(h), service.WithSet(h), service.WithCapabilities(h))
		if err != nil {
			t.Fatal(err)
		}
		rigs[served[i].Name] = &rig{sw: sw, st: st, pub: pub, b: b, c: servicetest.Client(t, srv)}
	}
	return rigs
}

// run advances the simulation to t (the engine runs on the test goroutine;
// gNMI calls reach it through Sim.Do between runs) and publishes state.
func (r *rig) run(t *testing.T, until engine.Time) {
	t.Helper()
	r.sw.Sim.Run(until)
	if err := r.pub.PublishNow(context.Background()); err != nil {
		t.Fatal(err)
	}
}

const q0 = "/lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]"

func (r *rig) uint(t *testing.T, path string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{store.MustPath(path)}, Encoding: gnmi.Encoding_PROTO})
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	u := resp.GetNotification()[0].GetUpdate()
	if len(u) != 1 {
		t.Fatalf("get %s: %d updates", path, len(u))
	}
	return u[0].GetVal().GetUintVal()
}

func (r *rig) set(t *testing.T, path string, v uint64) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.c.Set(ctx, &gnmi.SetRequest{Update: []*gnmi.Update{{Path: store.MustPath(path),
		Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}}}})
	return err
}

// TestSetChangesCNPGeneration is point 4 of the gNMI target issue: lowering
// K_max (or V_growth) through gNMI Set makes the real node send Long-haul
// CNPs it did not send before, as its counters show.
func TestSetChangesCNPGeneration(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		path    string
		val     uint64
		trigger string
	}{
		{"kmax", q0 + "/config/kmax", 1_000_000, q0 + "/state/counters/qd-triggers"},
		{"v-growth", q0 + "/config/v-growth", 100_000_000, q0 + "/state/counters/qgr-triggers"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := newRig(t)
			r.run(t, 3*engine.Millisecond)
			// Any action: far above K_max the severity picks PAUSE.
			sent := "/lhcnp/interfaces/interface[name=wan]/state/counters/notifications-sent"
			if got := r.uint(t, sent); got != 0 {
				t.Fatalf("before Set: %s = %d, want 0", sent, got)
			}
			if depth := r.uint(t, q0+"/state/queue-depth"); depth < 1_000_000 {
				t.Fatalf("before Set: queue depth %d, want a queue above 1 MB", depth)
			}
			if err := r.set(t, tc.path, tc.val); err != nil {
				t.Fatalf("set %s: %v", tc.path, err)
			}
			// The state mirrors the new value at once (published on commit).
			mirror := q0 + "/state/" + tc.desc
			if got := r.uint(t, mirror); got != tc.val {
				t.Errorf("after Set: %s = %d, want %d", mirror, got, tc.val)
			}
			if tc.desc == "kmax" {
				if got := r.uint(t, q0+"/state/effective-kmax"); got != tc.val {
					t.Errorf("after Set: effective-kmax = %d, want %d", got, tc.val)
				}
			}
			r.run(t, 6*engine.Millisecond)
			if got := r.uint(t, sent); got == 0 {
				t.Errorf("after Set: %s = 0, want Long-haul CNPs", sent)
			}
			if got := r.uint(t, q0+"/state/counters/cnp-rocev2-sent"); got == 0 {
				t.Errorf("after Set: cnp-rocev2-sent = 0, want RoCEv2-format CNPs")
			}
			if got := r.uint(t, tc.trigger); got == 0 {
				t.Errorf("after Set: %s = 0", tc.trigger)
			}
		})
	}
}

// TestSetRejectedByNodeChangesNothing: a configuration the YANG types and
// the model's rules accept but the dataplane refuses (enabled without a
// format and nothing else on, draft §6) is INVALID_ARGUMENT naming the
// master switch, and config, state and node stay as they were.
func TestSetRejectedByNodeChangesNothing(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	before := r.sw.Node.Config()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.c.Set(ctx, &gnmi.SetRequest{
		Update: []*gnmi.Update{
			{Path: store.MustPath(q0 + "/config/kmax"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 2_000_000}}},
			{Path: store.MustPath("/lhcnp/global/config/long-haul-cnp-rocev2"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: false}}},
		}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), masterConfig) || !strings.Contains(err.Error(), "§6") {
		t.Fatalf("set: %v, want InvalidArgument naming %s and §6", err, masterConfig)
	}
	after := r.sw.Node.Config()
	if after.FormatRoCEv2 != before.FormatRoCEv2 || after.Interfaces["n1:2"].Queues[0].KMaxBytes != 50_000_000 {
		t.Errorf("node config changed: rocev2 %v, kmax %d", after.FormatRoCEv2, after.Interfaces["n1:2"].Queues[0].KMaxBytes)
	}
	if got := r.uint(t, q0+"/config/kmax"); got != 50_000_000 {
		t.Errorf("config kmax = %d, want 50000000", got)
	}
	if got := r.uint(t, q0+"/state/effective-kmax"); got != 50_000_000 {
		t.Errorf("state effective-kmax = %d, want 50000000", got)
	}
}

// TestBufferSizePublished: an interface's state carries its port's egress
// buffer (the scenario's link buffer, 64 MB on the WAN port), which the
// tuner reads through the collector (queue_latest.buffer_bytes) to keep an
// overrun's K_max under a share of it, as it does in the simulator.
func TestBufferSizePublished(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	const path = "/lhcnp/interfaces/interface[name=wan]/state/buffer-size"
	if got := r.uint(t, path); got != 64_000_000 {
		t.Errorf("%s = %d, want the port's buffer 64000000 (testdata/line.yaml: 64MB)", path, got)
	}
}
