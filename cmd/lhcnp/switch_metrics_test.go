package main

import (
	"regexp"
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/promcheck"
	"github.com/openconfig/gnmi/proto/gnmi"
)

var metricsRE = regexp.MustCompile(`metrics on (http://\S+/metrics)`)

// TestSwitchMetrics scrapes `lhcnp switch --metrics` over HTTP after a Get
// and a Set and parses the exposition with Prometheus' own parser.
func TestSwitchMetrics(t *testing.T) {
	r := startSwitch(t, "--metrics", "127.0.0.1:0")
	r.out.mu.Lock()
	m := metricsRE.FindStringSubmatch(r.out.buf.String())
	r.out.mu.Unlock()
	if m == nil {
		t.Fatal("the switch did not print its metrics address")
	}
	c := gnmi.NewGNMIClient(dialGNMI(t, r.addr))
	q0 := "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]"
	if _, err := c.Get(testCtx(t), &gnmi.GetRequest{Path: []*gnmi.Path{mustParse(t, q0+"/state/effective-kmax")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(testCtx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: mustParse(t, q0+"/config/alpha"),
		Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte("0.5")}}}}}); err != nil {
		t.Fatal(err)
	}
	mf := promcheck.Scrape(t, m[1])
	rpcs := map[string]float64{}
	for _, x := range mf["lhcnp_gnmi_rpcs_total"].GetMetric() {
		var method, code string
		for _, l := range x.GetLabel() {
			switch l.GetName() {
			case "method":
				method = l.GetValue()
			case "code":
				code = l.GetValue()
			}
		}
		rpcs[method+" "+code] = x.GetCounter().GetValue()
	}
	if rpcs["Get OK"] != 1 || rpcs["Set OK"] != 1 {
		t.Errorf("rpcs_total %v, want one Get and one Set OK", rpcs)
	}
	if n := mf["lhcnp_gnmi_set_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("set_duration_seconds count %d, want 1", n)
	}
	for _, name := range []string{"lhcnp_engine_lag_seconds", "lhcnp_gnmi_subscribers", "lhcnp_gnmi_commit_pending", "lhcnp_gnmi_notifications_sent_total"} {
		if len(mf[name].GetMetric()) != 1 {
			t.Errorf("no %s", name)
		}
	}
}

func mustParse(t *testing.T, s string) *gnmi.Path {
	t.Helper()
	p, err := store.ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
