package service_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygot/ygot"
)

// fakeDP records applied configurations and can be told to refuse.
type fakeDP struct {
	mu      sync.Mutex
	applied []*oc.Lhcnp_Lhcnp
	refuse  error
}

func (f *fakeDP) ApplyConfig(_ context.Context, c *oc.Lhcnp_Lhcnp) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	cp, err := ygot.DeepCopy(c)
	if err != nil {
		return err
	}
	f.applied = append(f.applied, cp.(*oc.Lhcnp_Lhcnp))
	return nil
}

func (f *fakeDP) last() *oc.Lhcnp_Lhcnp {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.applied) == 0 {
		return nil
	}
	return f.applied[len(f.applied)-1]
}

func (f *fakeDP) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.applied)
}

var testSchema = func() *schema.Schema {
	s, err := schema.New()
	if err != nil {
		panic(err)
	}
	return s
}()

// epoch is the fake clock's start: store timestamps in tests are
// deterministic.
var epoch = time.Unix(1_800_000_000, 0)

type env struct {
	h   *service.Handler
	st  *store.Store
	dp  *fakeDP
	clk *clock.Fake
	c   gnmi.GNMIClient
	// addr is the server's, on 127.0.0.1 (for clients such as gnmic).
	addr string
}

// initialConfig is a small configuration: one interface with queue 3.
const initialConfig = `{
  "lhcnp:lhcnp": {
    "global": {"config": {"enabled": true, "long-haul-cnp-icmpv6": true, "metric-type": "QUEUE_DEPTH"}},
    "interfaces": {"interface": [{
      "name": "wan0",
      "config": {"name": "wan0", "rtt-est": 10000},
      "queues": {"queue": [{
        "id": 3,
        "config": {"id": 3, "alpha": "1.0", "v-growth": "1250000000", "kmax-mode": "BDP_ADAPTIVE"}
      }]}
    }]}
  }
}`

func newEnv(t *testing.T, opts ...service.HandlerOption) *env {
	t.Helper()
	clk := clock.NewFake(epoch)
	st := store.New(store.WithClock(clk))
	dp := &fakeDP{}
	h := service.NewHandler(testSchema, st, dp, append([]service.HandlerOption{service.WithHandlerClock(clk)}, opts...)...)
	if err := h.LoadJSON(context.Background(), []byte(initialConfig)); err != nil {
		t.Fatalf("LoadJSON: %v", err)
	}
	publishState(t, st)
	srv, err := service.New(service.WithInsecure(), service.WithCapabilities(h), service.WithGet(h), service.WithSet(h))
	if err != nil {
		t.Fatal(err)
	}
	addr := servicetest.Serve(t, srv)
	return &env{h: h, st: st, dp: dp, clk: clk, c: gnmi.NewGNMIClient(servicetest.Dial(t, addr)), addr: addr}
}

// publishState writes a small state tree for wan0/queue 3 (what the state
// publisher would write).
func publishState(t *testing.T, st *store.Store) {
	t.Helper()
	root := &oc.Root{}
	q := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface("wan0").GetOrCreateQueues().GetOrCreateQueue(3)
	q.GetOrCreateState().Id = ygot.Uint8(3)
	q.GetOrCreateState().Alpha = ygot.Float64(1)
	q.GetOrCreateState().EffectiveKmax = ygot.Uint64(1250000)
	q.GetOrCreateState().QueueDepth = ygot.Uint64(4096)
	q.GetOrCreateState().GetOrCreateCounters().CnpRateReduceSent = ygot.Uint64(7)
	q.GetOrCreateState().GetOrCreateLastCnp().Action = oc.LhcnpTypes_CnpAction_RATE_REDUCE
	vals, err := testSchema.Values(root)
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	for _, v := range vals {
		l, ok := testSchema.LeafAt(v.Path)
		if !ok {
			t.Fatalf("%s not in schema", schema.PathString(v.Path))
		}
		if l.Class == schema.ClassConfig {
			continue // list keys
		}
		b.Update(v.Path, v.Val, l.Kind)
	}
	if _, err := st.Apply(&b, 0); err != nil {
		t.Fatal(err)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustPath(s string) *gnmi.Path {
	p, err := store.ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

func uintVal(v uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}
}

func strVal(v string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: v}}
}

func ietf(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(s)}}
}

// render prints a notification's updates as "path = value" lines.
func render(n *gnmi.Notification) []string {
	var out []string
	for _, u := range n.GetUpdate() {
		out = append(out, fmt.Sprintf("%s = %s", schema.PathString(u.GetPath()), valString(u.GetVal())))
	}
	return out
}

func valString(v *gnmi.TypedValue) string {
	switch x := v.GetValue().(type) {
	case *gnmi.TypedValue_JsonVal:
		return string(x.JsonVal)
	case *gnmi.TypedValue_JsonIetfVal:
		return string(x.JsonIetfVal)
	case *gnmi.TypedValue_StringVal:
		return fmt.Sprintf("%q", x.StringVal)
	case *gnmi.TypedValue_UintVal:
		return fmt.Sprintf("uint %d", x.UintVal)
	case *gnmi.TypedValue_IntVal:
		return fmt.Sprintf("int %d", x.IntVal)
	case *gnmi.TypedValue_BoolVal:
		return fmt.Sprintf("bool %v", x.BoolVal)
	case *gnmi.TypedValue_DoubleVal:
		return fmt.Sprintf("double %g", x.DoubleVal)
	}
	return fmt.Sprintf("%v", v)
}

var errRefused = fmt.Errorf("queue 3: k-max too small: %w", service.ErrInvalidConfig)

var _ = errors.Is
