package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

func valid() config.File {
	f := config.Defaults()
	f.DB.DSN = "postgres://x"
	f.Targets = []config.Target{{Name: "a", Address: "h:1", Insecure: true}}
	return f
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		desc string
		edit func(f *config.File)
		want string
	}{
		{"valid", func(*config.File) {}, ""},
		{"no dsn", func(f *config.File) { f.DB.DSN = "" }, "db.dsn: missing (PostgreSQL connection string)"},
		{"queue smaller than a batch", func(f *config.File) { f.Writer.QueueRows = 10 }, "writer.queue_rows: 10: must hold at least one batch (writer.batch_rows 5000)"},
		{"refused file warning negative", func(f *config.File) { f.Writer.RefusedFileWarnBytes = -1 }, "writer.refused_file_warn_bytes: -1: negative"},
		{"fsync", func(f *config.File) { f.Writer.Fsync = "always" }, `writer.fsync: "always" is not batch or none`},
		{"lease ttl", func(f *config.File) { f.Leases = config.Leases{Enabled: true, TTL: time.Second, Renew: time.Second} }, "leases.ttl: must exceed leases.renew (both positive)"},
		{"target without address", func(f *config.File) { f.Targets[0].Address = "" }, "targets[a].address: missing"},
		{"target address without port", func(f *config.File) { f.Targets[0].Address = "n1.example" },
			`targets[a].address: "n1.example": missing port in address (want host:port)`},
		{"target address port out of range", func(f *config.File) { f.Targets[0].Address = "127.0.0.1:99999" },
			`targets[a].address: "127.0.0.1:99999": invalid port "99999"`},
		{"metrics address port out of range", func(f *config.File) { f.Metrics.Listen = "127.0.0.1:99999" },
			`metrics.listen: "127.0.0.1:99999": invalid port "99999"`},
		{"northbound address without port", func(f *config.File) { f.Northbound.Listen = "localhost"; f.Northbound.Insecure = true },
			`northbound.listen: "localhost": missing port in address (want host:port)`},
		{"target twice", func(f *config.File) { f.Targets = append(f.Targets, f.Targets[0]) }, `targets["a"]: listed twice`},
		{"insecure with a CA", func(f *config.File) { f.Targets[0].CAFile = "ca.pem" }, "targets[a].insecure: set together with TLS keys (ca_file, cert_file, skip_verify)"},
		{"skip_verify with a CA", func(f *config.File) {
			f.Targets[0].Insecure, f.Targets[0].SkipVerify, f.Targets[0].CAFile = false, true, os.DevNull
		},
			"targets[a].skip_verify: set together with ca_file: the certificate would not be verified, the CA ignored; give one of them"},
		{"missing CA file", func(f *config.File) { f.Targets[0].Insecure = false; f.Targets[0].CAFile = "/nonexistent/ca.pem" },
			"targets[a].ca_file: stat /nonexistent/ca.pem: no such file or directory"},
		{"cert without key", func(f *config.File) { f.Targets[0].Insecure = false; f.Targets[0].CertFile = "c.pem" }, "targets[a].cert_file: needs key_file (and the other way round)"},
		{"bad mode", func(f *config.File) {
			f.Targets[0].Subscriptions = []config.Subscription{{Paths: []string{"/a"}, Mode: "poll"}}
		},
			`targets[a].subscriptions[0].mode: "poll" is not sample, on_change or target_defined`},
		{"relative path", func(f *config.File) { f.Targets[0].Subscriptions = []config.Subscription{{Paths: []string{"a/b"}}} },
			`targets[a].subscriptions[0].paths: "a/b" does not start with /`},
		{"northbound TLS without users or client CA", func(f *config.File) {
			f.Northbound.Listen = "127.0.0.1:0"
			f.Northbound.TLSCert = "c.pem"
			f.Northbound.TLSKey = "k.pem"
		}, "northbound.users: TLS without northbound.users or northbound.client_ca would let every client Set as the anonymous read-write user; give a users file (lhcnp passwd), a client CA, or both"},
		{"northbound TLS with users", func(f *config.File) {
			f.Northbound.Listen = "127.0.0.1:0"
			f.Northbound.TLSCert = "c.pem"
			f.Northbound.TLSKey = "k.pem"
			f.Northbound.Users = "users"
		}, ""},
		{"northbound mutual TLS", func(f *config.File) {
			f.Northbound.Listen = "127.0.0.1:0"
			f.Northbound.TLSCert = "c.pem"
			f.Northbound.TLSKey = "k.pem"
			f.Northbound.ClientCA = "ca.pem"
		}, ""},
		{"northbound plaintext without users (labs)", func(f *config.File) {
			f.Northbound.Listen = "127.0.0.1:0"
			f.Northbound.Insecure = true
		}, ""},
		{"northbound without a limit per user", func(f *config.File) { f.Northbound.MaxStreamsPerUser = 0 },
			"northbound.max_streams_per_user: 0: must be positive"},
		{"northbound connection limit over uint32", func(f *config.File) { f.Northbound.MaxStreamsPerConnection = 1 << 32 },
			"northbound.max_streams_per_connection: 4294967296: at most 4294967295"},
		{"maintain interval 0", func(f *config.File) { f.DB.MaintainInterval = 0 }, "db.maintain_interval: 0s: must be positive"},
		{"retention unset", func(f *config.File) { f.DB.Retention = "" }, ""},
		{"retention 0 keeps everything", func(f *config.File) { f.DB.Retention = "0" }, ""},
		{"retention 168h", func(f *config.File) { f.DB.Retention = "168h" }, ""},
		{"retention without a unit", func(f *config.File) { f.DB.Retention = "30" },
			`db.retention: "30": want a duration of 1s or more such as 168h, or 0 for ever (unset: the database's own)`},
		{"retention under a second", func(f *config.File) { f.DB.Retention = "500ms" },
			`db.retention: "500ms": want a duration of 1s or more such as 168h, or 0 for ever (unset: the database's own)`},
		{"retention negative", func(f *config.File) { f.DB.Retention = "-1h" },
			`db.retention: "-1h": want a duration of 1s or more such as 168h, or 0 for ever (unset: the database's own)`},
		{"sample interval on change", func(f *config.File) {
			f.Targets[0].Subscriptions = []config.Subscription{{Paths: []string{"/a"}, Mode: "on_change", SampleInterval: config.Duration(time.Second)}}
		}, "targets[a].subscriptions[0].sample_interval: only for mode sample (gNMI 3.5.1.5.2)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			f := valid()
			tt.edit(&f)
			got := ""
			if err := f.Check(); err != nil {
				got = err.Error()
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Check (-want +got):\n%s", d)
			}
		})
	}
}

func TestSubscribeRequest(t *testing.T) {
	subs, err := config.ParseSubscriptions([]byte(`[{"paths": ["/lhcnp/interfaces", "/lhcnp/global"], "mode": "sample", "sample_interval": "250ms", "suppress_redundant": true, "heartbeat_interval": "10s"}, {"paths": ["/lhcnp/flow-table"], "mode": "on_change"}]`))
	if err != nil {
		t.Fatal(err)
	}
	tg := config.Target{Name: "a", Address: "h:1", Subscriptions: subs}
	got, err := tg.SubscribeRequest()
	if err != nil {
		t.Fatal(err)
	}
	sample := func(p string) *gnmi.Subscription {
		return &gnmi.Subscription{Path: store.MustPath(p), Mode: gnmi.SubscriptionMode_SAMPLE, SampleInterval: 250e6,
			SuppressRedundant: true, HeartbeatInterval: 10e9}
	}
	want := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{sample("/lhcnp/interfaces"), sample("/lhcnp/global"),
			{Path: store.MustPath("/lhcnp/flow-table"), Mode: gnmi.SubscriptionMode_ON_CHANGE}},
	}}}
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
	if _, err := config.ParseSubscriptions([]byte(`[{"path": ["/x"]}]`)); err == nil {
		t.Error("unknown key in the subscriptions column: no error")
	}
	// A path that does not parse is refused by the check, naming the
	// target, the subscription and the key (it was taken, and failed at
	// every Subscribe: FuzzSubscriptions found it).
	bad := config.Target{Name: "n1", Address: "127.0.0.1:9339", Insecure: true,
		Subscriptions: []config.Subscription{{Paths: []string{"/lhcnp/interfaces/interface[name=wan"}}}}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "targets[n1].subscriptions[0].paths: ") || !strings.Contains(err.Error(), "unterminated key") {
		t.Errorf("unparsable path: %v, want targets[n1].subscriptions[0].paths: … unterminated key", err)
	}
}
