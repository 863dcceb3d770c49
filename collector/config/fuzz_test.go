package config_test

import (
	"testing"

	"github.com/lhcnp/lhcnp/collector/config"
)

// FuzzSubscriptions: the targets table's subscriptions column never panics
// the collector, and a row its check accepts is one it can subscribe with
// (the check is where a bad row is refused, naming the target and the key,
// not the first Subscribe after it).
func FuzzSubscriptions(f *testing.F) {
	f.Add([]byte(`[{"paths": ["/lhcnp/interfaces", "/lhcnp/global"], "mode": "sample", "sample_interval": "250ms", "suppress_redundant": true, "heartbeat_interval": "10s"}, {"paths": ["/lhcnp/flow-table"], "mode": "on_change"}]`))
	f.Add([]byte(`[{"paths": ["/lhcnp/interfaces/interface[name=wan]/queues/queue[id=3]/state"], "mode": "target_defined"}]`))
	f.Add([]byte(`[{"paths": ["/a[name=x"]}]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		subs, err := config.ParseSubscriptions(data)
		if err != nil {
			return
		}
		tg := config.Target{Name: "n1", Address: "127.0.0.1:9339", Insecure: true, Subscriptions: subs}
		if err := tg.Check(); err != nil {
			return
		}
		req, err := tg.SubscribeRequest()
		if err != nil {
			t.Fatalf("checked subscriptions %s cannot be subscribed: %v", data, err)
		}
		want := 0
		for _, s := range subs {
			want += len(s.Paths)
		}
		if len(subs) == 0 {
			want = len(req.GetSubscribe().GetSubscription())
		}
		if got := len(req.GetSubscribe().GetSubscription()); got != want {
			t.Fatalf("%d subscriptions for %d paths", got, want)
		}
	})
}
