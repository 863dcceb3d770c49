package fabric

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	lhsim "github.com/lhcnp/lhcnp/dataplane-sim/sim"
	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const labScenario = "../../scenarios/lab.yaml"

// labSchema is the schema of the tests' fabrics that build many
// (Config.Schema): it is immutable, and loading it was half of each New's
// time (90 ms under -race).
var labSchema = func() *schema.Schema {
	s, err := schema.New()
	if err != nil {
		panic(err)
	}
	return s
}()

func loadLab(t *testing.T) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadFile(labScenario)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func client(t *testing.T, addr string) gnmi.GNMIClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return gnmi.NewGNMIClient(conn)
}

func path(t *testing.T, elems ...string) *gnmi.Path {
	t.Helper()
	p := &gnmi.Path{Origin: "lhcnp"}
	for _, e := range elems {
		pe := &gnmi.PathElem{Name: e}
		if i := len(e) - 1; i > 0 && e[i] == ']' {
			for j := range e {
				if e[j] == '[' {
					pe.Name = e[:j]
					kv := e[j+1 : i]
					for k := range kv {
						if kv[k] == '=' {
							pe.Key = map[string]string{kv[:k]: kv[k+1:]}
						}
					}
					break
				}
			}
		}
		p.Elem = append(p.Elem, pe)
	}
	return p
}

// getUint reads one numeric state leaf with Get (JSON_IETF).
func getUint(ctx context.Context, t *testing.T, c gnmi.GNMIClient, p *gnmi.Path) (uint64, error) {
	resp, err := c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{p}, Type: gnmi.GetRequest_STATE, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		return 0, err
	}
	for _, n := range resp.GetNotification() {
		for _, u := range n.GetUpdate() {
			var s any
			if err := json.Unmarshal(u.GetVal().GetJsonIetfVal(), &s); err != nil {
				return 0, err
			}
			switch v := s.(type) {
			case string:
				return strconv.ParseUint(v, 10, 64)
			case float64:
				return uint64(v), nil
			}
		}
	}
	return 0, nil
}

// TestThreeSwitchesAnswerGNMI: the lab's three switches in one process on
// one engine, each with its own gNMI target: a real gRPC client per switch
// reads its own interfaces, the engine lag and speed, and the traffic that
// crosses all three advances the counters of n1's WAN queue and n2's
// queue towards dest.
func TestThreeSwitchesAnswerGNMI(t *testing.T) {
	sc := loadLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := New(ctx, Config{Scenario: sc, Speed: 0.02, PublishInterval: 50 * time.Millisecond,
		TargetOptions: []service.Option{service.WithInsecure()},
		Switches: []Switch{
			{Name: "t1", Listen: "127.0.0.1:0"},
			{Name: "n1", Listen: "127.0.0.1:0", Config: readFile(t, "../../examples/lab-n1.json"), ConfigName: "lab-n1.json"},
			{Name: "n2", Listen: "127.0.0.1:0", Config: readFile(t, "../../examples/lab-n2.json"), ConfigName: "lab-n2.json",
				Interfaces: map[string]string{"to-dest": "n2-dest"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	wantIfaces := map[string][]string{"t1": {"source-t1", "a1-t1", "a2-t1", "t1-n1"}, "n1": {"t1-n1", "wan"}, "n2": {"wan", "to-dest", "n2-b1", "c1-n2"}}
	clients := map[string]gnmi.GNMIClient{}
	for _, s := range f.Switches() {
		c := client(t, s.Addr().String())
		clients[s.Name] = c
		resp, err := c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{path(t, "lhcnp", "interfaces", "interface[name=*]", "state", "name")},
			Type: gnmi.GetRequest_STATE, Encoding: gnmi.Encoding_JSON_IETF})
		if err != nil {
			t.Fatalf("switch %s: Get: %v", s.Name, err)
		}
		var got []string
		for _, n := range resp.GetNotification() {
			for _, u := range n.GetUpdate() {
				var name string
				if err := json.Unmarshal(u.GetVal().GetJsonIetfVal(), &name); err != nil {
					t.Fatal(err)
				}
				got = append(got, name)
			}
		}
		if diff := cmp.Diff(wantIfaces[s.Name], got, sortStrings); diff != "" {
			t.Errorf("switch %s interfaces (-want +got):\n%s", s.Name, diff)
		}
		if _, err := getUint(ctx, t, c, path(t, "lhcnp", "global", "state", "engine-lag")); err != nil {
			t.Errorf("switch %s: engine-lag: %v", s.Name, err)
		}
		// The speed the switch was started with, through ygnmi's typed
		// query (decimal64 on the wire): what the collector's views read.
		yc, err := ygnmi.NewClient(c)
		if err != nil {
			t.Fatal(err)
		}
		if speed, err := ygnmi.Get(ctx, yc, ocpath.Root().Lhcnp().Global().State().EngineSpeed()); err != nil || speed != 0.02 {
			t.Errorf("switch %s: engine-speed %v (%v), want 0.02", s.Name, speed, err)
		}
	}
	// Subscribe is wired with the switch's limits: the publish interval is
	// the smallest sample_interval (sample_interval 0 samples at it), and
	// use_models is checked as Get checks it.
	for _, tt := range []struct {
		desc string
		sl   *gnmi.SubscriptionList
		msg  string
	}{
		{desc: "sample_interval below the publish interval", sl: &gnmi.SubscriptionList{Subscription: []*gnmi.Subscription{{
			Path: path(t, "lhcnp", "global"), Mode: gnmi.SubscriptionMode_SAMPLE, SampleInterval: uint64(20 * time.Millisecond)}}},
			msg: "below the minimum 50ms"},
		{desc: "a model not served", sl: &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, UseModels: []*gnmi.ModelData{{Name: "openconfig-interfaces"}},
			Subscription: []*gnmi.Subscription{{Path: path(t, "lhcnp", "global")}}}, msg: `use_models: model "openconfig-interfaces"`},
	} {
		if err := subscribeErr(ctx, t, clients["t1"], tt.sl); status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tt.msg) {
			t.Errorf("Subscribe, %s: %v, want INVALID_ARGUMENT containing %q", tt.desc, err, tt.msg)
		}
	}
	wanPkts := path(t, "lhcnp", "interfaces", "interface[name=wan]", "queues", "queue[id=0]", "state", "counters", "packets")
	destPkts := path(t, "lhcnp", "interfaces", "interface[name=to-dest]", "queues", "queue[id=0]", "state", "counters", "packets")
	pollUntil(ctx, t, "n1's WAN queue and n2's queue to dest forward packets", func() (bool, error) {
		a, err := getUint(ctx, t, clients["n1"], wanPkts)
		if err != nil {
			return false, err
		}
		b, err := getUint(ctx, t, clients["n2"], destPkts)
		return a > 0 && b > 0, err
	})
}

// subscribeErr sends sl and returns the error that ends the stream, or nil at
// the first response.
func subscribeErr(ctx context.Context, t *testing.T, c gnmi.GNMIClient, sl *gnmi.SubscriptionList) error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sc, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: sl}}) // a refusal comes from Recv
	_, err = sc.Recv()
	return err
}

var sortStrings = cmp.Transformer("sort", func(in []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range in {
		m[s] = true
	}
	return m
})

// pollUntil calls cond every 50 ms until it holds or ctx ends.
func pollUntil(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the deadline (last error: %v)", what, last)
		case <-tick.C: // polling interval
		}
	}
}

type nodeCounts struct {
	Ports map[string]netsim.PortStats
	Hosts map[string]netsim.HostStats
	Flows map[string][2]int64 // bytes sent, bytes received
}

func countsOf(n *netsim.Network) nodeCounts {
	c := nodeCounts{Ports: map[string]netsim.PortStats{}, Hosts: map[string]netsim.HostStats{}, Flows: map[string][2]int64{}}
	for _, pt := range n.Ports() {
		c.Ports[pt.Name()] = pt.Stats()
	}
	for _, h := range n.Hosts() {
		c.Hosts[h.Name()] = h.Stats()
	}
	for _, f := range n.Flows() {
		c.Flows[f.Name] = [2]int64{f.Sender.SentBytes(), f.Receiver.RxBytes()}
	}
	return c
}

// TestFabricMatchesBatch: the in-process fabric (three switches, their
// gNMI nodes at their default configuration) runs the lab scenario exactly
// as the batch simulator does with the same seed: every port, host and
// flow counter is equal after 150 ms of simulated time.
func TestFabricMatchesBatch(t *testing.T) {
	sc := loadLab(t)
	const d = 150 * time.Millisecond
	// The batch runner leaves out flows that start after the end; the
	// fabric runs for ever. Compare the flows both have.
	var flows []scenario.Flow
	for _, fl := range sc.Flows {
		if fl.Start < d {
			flows = append(flows, fl)
		}
	}
	sc.Flows = flows

	var batch *netsim.Network
	_, err := lhsim.Run(context.Background(), sc, t.TempDir(), lhsim.WithDuration(d), lhsim.WithoutPlots(),
		lhsim.WithMechanism(scenario.MechanismDCQCN, lhsim.MechanismFunc(func(env *lhsim.Env) error {
			batch = env.Net
			return nil
		})))
	if err != nil {
		t.Fatal(err)
	}

	f, err := New(context.Background(), Config{Scenario: sc, TargetOptions: []service.Option{service.WithInsecure()},
		Switches: []Switch{{Name: "t1", Listen: "127.0.0.1:0"}, {Name: "n1", Listen: "127.0.0.1:0"}, {Name: "n2", Listen: "127.0.0.1:0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Sim().Run(engine.FromDuration(d))

	want, got := countsOf(batch), countsOf(f.Network().Net)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fabric differs from the batch simulator (-batch +fabric):\n%s", diff)
	}
	if got.Ports["n1:1"].ECNMarks == 0 || got.Flows["main"][1] == 0 {
		t.Errorf("n1's WAN port marked nothing or main delivered nothing: the comparison is not exercised (%+v)", got.Ports["n1:1"])
	}
}

// TestFabricDeterministic: the in-process fabric with its switches'
// YANG configuration (Long-haul CNP on n1 and n2) run twice to the same
// simulated time gives the same counters everywhere, notifications
// included.
func TestFabricDeterministic(t *testing.T) {
	build := func() *Fabric {
		f, err := New(context.Background(), Config{Scenario: loadLab(t), TargetOptions: []service.Option{service.WithInsecure()},
			Switches: []Switch{
				{Name: "t1", Listen: "127.0.0.1:0"},
				{Name: "n1", Listen: "127.0.0.1:0", Config: readFile(t, "../../examples/lab-n1.json"), ConfigName: "lab-n1.json"},
				{Name: "n2", Listen: "127.0.0.1:0", Config: readFile(t, "../../examples/lab-n2.json"), ConfigName: "lab-n2.json",
					Interfaces: map[string]string{"to-dest": "n2-dest"}},
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		f.Sim().Run(300 * engine.Millisecond)
		return f
	}
	a, b := build(), build()
	if diff := cmp.Diff(countsOf(a.Network().Net), countsOf(b.Network().Net)); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
	// The sources' reaction points consume the nodes' notifications.
	var sent [2]int64
	for i, f := range []*Fabric{a, b} {
		for _, h := range f.Network().Net.Hosts() {
			sent[i] += h.Stats().ControlRx
		}
	}
	if sent[0] != sent[1] || sent[0] == 0 {
		t.Errorf("notifications taken by the sources: %d and %d; want equal and not zero", sent[0], sent[1])
	}
}

// TestSpeedOutOfRange: a speed the engine-speed leaf cannot hold (decimal64,
// 9 fraction digits) is refused before anything starts.
func TestSpeedOutOfRange(t *testing.T) {
	sc := loadLab(t)
	for _, tt := range []struct {
		desc  string
		speed float64
	}{
		{"negative", -1},
		{"below a nanosecond per second", 1e-10},
		{"above the leaf's range", 1e10},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			f, err := New(context.Background(), Config{Scenario: sc, Speed: tt.speed,
				Switches: []Switch{{Name: "t1", Listen: "127.0.0.1:0"}}})
			if err == nil {
				f.Close()
				t.Fatalf("speed %g accepted", tt.speed)
			}
		})
	}
}
