package dataplane_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/gnmicbin"
	"github.com/lhcnp/lhcnp/internal/oracle"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// servedSwitch is one switch of a network with its own gNMI target
// listening on loopback.
type servedSwitch struct {
	pub  *dataplane.Publisher
	addr string
}

// serveNetwork builds the scenario file for one process serving the named
// switches (their flows and the WAN between them run on one engine) and
// starts a gNMI target for each on 127.0.0.1, with no initial
// configuration (every mechanism off).
func serveNetwork(t *testing.T, file string, names ...string) (*dataplane.Network, []servedSwitch) {
	t.Helper()
	sc, err := scenario.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var served []dataplane.Served
	for _, n := range names {
		served = append(served, dataplane.Served{Name: n})
	}
	nw, err := dataplane.BuildNetwork(sc, served, dataplane.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	var out []servedSwitch
	for _, sw := range nw.Switches {
		st := store.New()
		b := dataplane.NewBinding(sw.Sim, sw.Node, sw.Ports)
		pub := dataplane.NewPublisher(s, st, b)
		h := service.NewHandler(s, st, b, service.WithStatePublisher(pub))
		srv, err := service.New(service.WithInsecure(), service.WithGet(h), service.WithSet(h), service.WithCapabilities(h))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, servedSwitch{pub: pub, addr: servicetest.Serve(t, srv)})
	}
	return nw, out
}

// runGnmic runs gnmic against addr (insecure) and returns its output.
func runGnmic(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	bin, err := gnmicbin.Path("../..")
	if err != nil {
		oracle.Missing(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"-a", addr, "--insecure", "--timeout", "20s"}, args...)...).CombinedOutput()
	return string(out), err
}

// gnmicAt runs gnmic and fails the test when it fails.
func gnmicAt(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, err := runGnmic(t, addr, args...)
	if err != nil {
		t.Fatalf("gnmic %q: %v\n%s", args, err, out)
	}
	return out
}

// fcnCounters reads /lhcnp/fcn/state/counters with gnmic (JSON_IETF).
func fcnCounters(t *testing.T, addr string) map[string]uint64 {
	t.Helper()
	out := gnmicAt(t, addr, "get", "-e", "json_ietf", "--type", "state", "--path", "/lhcnp/fcn/state/counters")
	var resp []struct {
		Updates []struct {
			Values map[string]map[string]json.RawMessage `json:"values"`
		} `json:"updates"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp) != 1 || len(resp[0].Updates) != 1 {
		t.Fatalf("gnmic get: %v\n%s", err, out)
	}
	got := map[string]uint64{}
	for _, v := range resp[0].Updates[0].Values {
		for k, raw := range v {
			var n json.Number
			if err := json.Unmarshal(raw, &n); err != nil {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("%s = %s", k, raw)
				}
				n = json.Number(s)
			}
			u, err := n.Int64()
			if err != nil {
				t.Fatalf("%s = %s: %v", k, raw, err)
			}
			got[strings.TrimPrefix(k, "lhcnp:")] = uint64(u)
		}
	}
	return got
}

// TestSetFCNTransit: FCN's TRANSIT role set through gNMI with gnmic over a
// real socket. pe1 (its own target) is the ingress PE, t1 the congested
// WAN node: before t1 takes the role it reports nothing; after, it reads
// the outer header of the tunnelled packets, sends FCN messages to pe1,
// which translates them into CNPs for the senders, as both targets'
// counters show (t1's per queue too). FCN beside Long-haul CNP is refused
// naming fcn-role.
func TestSetFCNTransit(t *testing.T) {
	nw, sw := serveNetwork(t, "testdata/wan6.yaml", "pe1", "t1")
	pe, tr := sw[0], sw[1]
	run := func(until engine.Time) {
		t.Helper()
		nw.Sim.Run(until)
		for _, s := range sw {
			if err := s.pub.PublishNow(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	gnmicAt(t, pe.addr, "set", "-e", "json_ietf", "--update-path", "/lhcnp", "--update-value", fcnPEConfig)
	run(2 * engine.Millisecond)
	if c := fcnCounters(t, pe.addr); c["mappings-created"] != 2 || c["encapsulated-packets"] == 0 || c["fcn-received"] != 0 {
		t.Fatalf("pe1 before t1 is a transit node: %v, want 2 mappings, packets encapsulated, no FCN", c)
	}

	refused := gnmicRefused(t, tr.addr, "set", "-e", "json_ietf", "--update-path", "/lhcnp/global/config", "--update-value",
		`{"enabled": true, "long-haul-cnp-rocev2": true, "fcn-role": "TRANSIT"}`)
	if !strings.Contains(refused, "InvalidArgument") || !strings.Contains(refused, "fcn-role") || !strings.Contains(refused, "cannot both run on one node") {
		t.Errorf("TRANSIT beside Long-haul CNP: want InvalidArgument naming fcn-role:\n%s", refused)
	}

	gnmicAt(t, tr.addr, "set", "-e", "json_ietf", "--update-path", "/lhcnp", "--update-value", fcnTransitConfig)
	if role := gnmicAt(t, tr.addr, "get", "-e", "json_ietf", "--type", "state", "--path", "/lhcnp/global/state/fcn-role"); !strings.Contains(role, "TRANSIT") {
		t.Errorf("fcn-role state: %s", role)
	}
	before := fcnCounters(t, tr.addr)
	if before["fcn-sent"] != 0 {
		t.Fatalf("t1 at the start of its role: %v", before)
	}
	run(8 * engine.Millisecond)
	tc, pc := fcnCounters(t, tr.addr), fcnCounters(t, pe.addr)
	// A trigger may pick a flow whose packets the node has not queued
	// since it took the role (at most the two flows, once each).
	if tc["fcn-sent"] == 0 || tc["tunnelled-packets"] == 0 || tc["not-tunnelled"] > 2 {
		t.Errorf("t1 as a transit node: %v, want FCN messages sent from tunnelled packets", tc)
	}
	perQueue := gnmicAt(t, tr.addr, "get", "-e", "json_ietf", "--type", "state", "--path",
		"/lhcnp/interfaces/interface[name=wan2]/queues/queue[id=0]/state/counters/fcn-sent")
	if !regexp.MustCompile(`fcn-sent": "?[1-9]`).MatchString(perQueue) {
		t.Errorf("t1's queue towards pe2: want its fcn-sent above 0:\n%s", perQueue)
	}
	if pc["fcn-received"] == 0 || pc["cnp-translated"] == 0 || pc["fcn-received"] > tc["fcn-sent"] || pc["unknown-flow-label"] != 0 {
		t.Errorf("pe1: %v (t1 sent %d): want the FCN messages received and translated", pc, tc["fcn-sent"])
	}
	// The translated CNPs are switch-originated notifications: the node's
	// notifications-sent counts them beside its interfaces' (the PE's
	// direct CNPs, for its own ports); the old target left them out.
	global := gnmicSum(t, pe.addr, "/lhcnp/global/state/counters/notifications-sent")
	ports := gnmicSum(t, pe.addr, "/lhcnp/interfaces/interface/state/counters/notifications-sent")
	if global != ports+pc["cnp-translated"] {
		t.Errorf("pe1: notifications-sent %d, want its interfaces' %d and the %d CNPs translated", global, ports, pc["cnp-translated"])
	}
}

// gnmicSum reads the state leaves at path (a wildcard's too) with gnmic
// (JSON_IETF) and returns the sum of their values.
func gnmicSum(t *testing.T, addr, path string) uint64 {
	t.Helper()
	out := gnmicAt(t, addr, "get", "-e", "json_ietf", "--type", "state", "--path", path)
	var resp []struct {
		Updates []struct {
			Values map[string]json.RawMessage `json:"values"`
		} `json:"updates"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp) == 0 {
		t.Fatalf("gnmic get %s: %v\n%s", path, err, out)
	}
	var sum uint64
	for _, r := range resp {
		for _, u := range r.Updates {
			for _, raw := range u.Values {
				var s string
				if json.Unmarshal(raw, &s) != nil {
					s = string(raw)
				}
				n, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					t.Fatalf("gnmic get %s: %s", path, raw)
				}
				sum += n
			}
		}
	}
	return sum
}

// gnmicRefused runs gnmic expecting it to fail and returns its output.
func gnmicRefused(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, err := runGnmic(t, addr, args...)
	if err == nil {
		t.Errorf("gnmic %q succeeded:\n%s", args, out)
	}
	return out
}
