package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var kmaxRE = regexp.MustCompile(`effective-kmax":(\d+)}`)

// TestInteropGnmic drives `lhcnp switch` with gnmic as operators type it:
// every RPC, every subscription mode, every encoding, and the request
// shapes gnmic sends by default (json_val for Set, bare numbers with -e
// json_ietf, paths with and without module names or an origin, a prefix
// with a target).
func TestInteropGnmic(t *testing.T) {
	t.Parallel()
	needGnmic(t)
	r := startSwitch(t)
	a := []string{"-a", r.addr, "--insecure"}
	g := func(args ...string) []string { return append(append([]string{}, a...), args...) }
	const q0 = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]"

	t.Run("capabilities", func(t *testing.T) {
		out := gnmicOK(t, g("capabilities")...)
		wantIn(t, "capabilities", out, "gNMI version: 0.10.0", "lhcnp, The lhcnp project, 2026-12-07",
			"lhcnp-types, The lhcnp project, 2026-12-07", "- JSON_IETF", "- JSON", "- PROTO")
	})

	t.Run("get", func(t *testing.T) {
		for _, tt := range []struct {
			desc string
			args []string
			want []string
		}{
			{"leaf, JSON (gnmic's default)", []string{"--path", "/lhcnp/interfaces/interface[name=wan0]/state/effective-rtt-est"},
				[]string{`"lhcnp/interfaces/interface/state/effective-rtt-est": 10000`}},
			{"leaf, JSON_IETF, uint64 as a string", []string{"-e", "json_ietf", "--path", q0 + "/config/v-growth"},
				[]string{`"lhcnp/interfaces/interface/queues/queue/config/v-growth": "1250000000"`}},
			{"leaf, PROTO", []string{"-e", "proto", "--path", q0 + "/state/effective-kmax"},
				[]string{`"lhcnp/interfaces/interface/queues/queue/state/effective-kmax": 12500000`}},
			{"container, JSON_IETF: module name at the top only", []string{"-e", "json_ietf", "--type", "config", "--path", q0 + "/config"},
				[]string{`"lhcnp:v-growth": "1250000000"`, `"lhcnp:alpha": "1.0"`}},
			{"container, JSON: no module names, numbers as numbers", []string{"-e", "json", "--type", "config", "--path", q0 + "/config"},
				[]string{`"v-growth": 1250000000`, `"alpha": 1`}},
			{"list entry, JSON: lists as arrays", []string{"--type", "config", "--path", "/lhcnp/interfaces/interface[name=wan0]"},
				[]string{`"queue": [`, `"id": 0`}},
			{"module-qualified path", []string{"--path", "/lhcnp:lhcnp/global/state/enabled"},
				[]string{`"lhcnp/global/state/enabled": true`}},
			{"origin lhcnp", []string{"--path", "lhcnp:/lhcnp/global/state/enabled"},
				[]string{`"Path": "lhcnp:/lhcnp/global/state/enabled"`}},
			{"origin openconfig", []string{"--path", "openconfig:/lhcnp/global/state/enabled"},
				[]string{`"lhcnp/global/state/enabled": true`}},
			{"prefix with a target", []string{"--target", "n1", "--prefix", q0, "--path", "state/effective-kmax"},
				[]string{`"target": "n1"`, `"state/effective-kmax": 12500000`}},
			{"wildcards", []string{"-e", "json_ietf", "--type", "state", "--path", "/lhcnp/interfaces/interface[name=*]/queues/queue[id=*]/state/effective-kmax"},
				[]string{`"Path": "lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/state/effective-kmax"`}},
			{"data type operational", []string{"--type", "operational", "--path", q0 + "/state/effective-kmax"},
				[]string{`12500000`}},
		} {
			t.Run(tt.desc, func(t *testing.T) {
				wantIn(t, tt.desc, gnmicOK(t, g(append([]string{"get"}, tt.args...)...)...), tt.want...)
			})
		}
		out, err := gnmic(t, g("get", "--type", "state", "--path", q0+"/config/alpha")...)
		if err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("get of a config leaf as STATE: %v, want NotFound:\n%s", err, out)
		}
		out, err = gnmic(t, g("get", "--path", "/lhcnp/bogus")...)
		if err == nil || !strings.Contains(out, "InvalidArgument") || !strings.Contains(out, "/lhcnp/bogus") {
			t.Errorf("get of a path outside the schema: %v, want InvalidArgument naming it:\n%s", err, out)
		}
	})

	kmax := func(t *testing.T) string {
		t.Helper()
		out := gnmicOK(t, g("get", "-e", "proto", "--path", q0+"/state/effective-kmax")...)
		m := kmaxRE.FindStringSubmatch(compact(out))
		if m == nil {
			t.Fatalf("no effective-kmax in\n%s", out)
		}
		return m[1]
	}
	wantKmax := func(t *testing.T, what string, v string) {
		t.Helper()
		if got := kmax(t); got != v {
			t.Errorf("%s: effective-kmax %s, want %s", what, got, v)
		}
	}

	t.Run("set", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "queue.json")
		if err := os.WriteFile(file, []byte(`{"kmax-mode": "EXPLICIT", "kmax": 3000000}`), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			desc string
			args []string
			kmax string // effective-kmax after
		}{
			{"decimal64 from --update-value (json_val 0.5)",
				[]string{"--update-path", q0 + "/config/alpha", "--update-value", "0.5"}, "6250000"},
			{"decimal64 as a bare number in json_ietf_val, module-qualified path",
				[]string{"-e", "json_ietf", "--update-path", "/lhcnp:lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/config/alpha", "--update-value", "0.25"}, "3125000"},
			{"decimal64 as an RFC 7951 string",
				[]string{"-e", "json_ietf", "--update-path", q0 + "/config/alpha", "--update-value", `"0.75"`}, "9375000"},
			{"typed JSON value",
				[]string{"--update", q0 + "/config/alpha:::json:::1"}, "12500000"},
			{"a subtree from a file (json_val)",
				[]string{"--update-path", q0 + "/config", "--update-file", file}, "3000000"},
			{"uint64 typed (uint_val), prefix with a target",
				[]string{"--target", "n1", "--prefix", q0 + "/config", "--update", "kmax:::uint:::4000000"}, "4000000"},
			{"replace a container (JSON_IETF, origin lhcnp)",
				[]string{"-e", "json_ietf", "--replace-path", "lhcnp:" + q0 + "/config", "--replace-value", `{"lhcnp:id": 0, "lhcnp:alpha": "0.5"}`}, "6250000"},
			{"delete a leaf: the default comes back",
				[]string{"--delete", q0 + "/config/alpha"}, "12500000"},
		} {
			t.Run(tt.desc, func(t *testing.T) {
				out := gnmicOK(t, g(append([]string{"set"}, tt.args...)...)...)
				wantIn(t, tt.desc, out, `"results": [`)
				wantKmax(t, tt.desc, tt.kmax)
			})
		}
		before := kmax(t)
		out, err := gnmic(t, g("set", "--update-path", q0+"/config/alpha", "--update-value", "fast")...)
		if err == nil {
			t.Fatalf("a bad Set succeeded:\n%s", out)
		}
		wantIn(t, "bad set", out, "code = InvalidArgument", q0+"/config/alpha", `the string "fast" is not a decimal64 number`)
		if after := kmax(t); after != before {
			t.Errorf("a refused Set changed effective-kmax: %s → %s", before, after)
		}
	})

	t.Run("subscribe once", func(t *testing.T) {
		for _, enc := range []string{"json", "json_ietf", "proto"} {
			out := gnmicOK(t, g("subscribe", "--mode", "once", "-e", enc, "--path", "/lhcnp/interfaces/interface[name=wan0]/state/effective-rtt-est")...)
			want := `"effective-rtt-est": 10000`
			wantIn(t, "once "+enc, out, want, `"sync-response": true`)
		}
		out, err := gnmic(t, g("subscribe", "--mode", "once", "--path", "/lhcnp/interfaces/interface[name=wan0]/state/effective-rtt-estimate")...)
		if err == nil || !strings.Contains(out, "InvalidArgument") || !strings.Contains(out, "effective-rtt-estimate") {
			t.Errorf("subscribe to a path outside the schema: %v, want InvalidArgument naming it:\n%s", err, out)
		}
	})

	t.Run("subscribe poll", func(t *testing.T) {
		p := startGnmic(t, g("subscribe", "--mode", "poll", "--path", "/lhcnp/global/state/enabled")...)
		p.waitFor(t, `"sync-response": true`)
		for range 2 {
			p.poll(t)
			p.waitFor(t, `"enabled": true`)
		}
	})

	t.Run("subscribe stream sample", func(t *testing.T) {
		p := startGnmic(t, g("subscribe", "--mode", "stream", "--stream-mode", "sample", "--sample-interval", "100ms",
			"-e", "proto", "--path", q0+"/state/counters/ecn-marked-packets")...)
		p.waitFor(t, `"sync-response": true`)
		for range 3 {
			p.waitFor(t, `"ecn-marked-packets":`)
		}
	})

	t.Run("subscribe stream on-change", func(t *testing.T) {
		p := startGnmic(t, g("subscribe", "--mode", "stream", "--stream-mode", "on-change", "-e", "json_ietf",
			"--target", "n1", "--path", "/lhcnp:lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/state/alpha")...)
		p.waitFor(t, `"sync-response": true`)
		gnmicOK(t, g("set", "--update-path", q0+"/config/alpha", "--update-value", "0.625")...)
		p.waitFor(t, `"alpha": "0.625"`)
	})

	t.Run("subscribe stream target-defined (gnmic's default)", func(t *testing.T) {
		p := startGnmic(t, g("subscribe", "--path", q0+"/state/effective-kmax", "--path", q0+"/config/alpha")...)
		p.waitFor(t, `"sync-response": true`)
		gnmicOK(t, g("set", "--update-path", q0+"/config/alpha", "--update-value", "0.5")...)
		p.waitFor(t, `"effective-kmax": 6250000`)
	})

	t.Run("subscribe updates-only with a heartbeat", func(t *testing.T) {
		p := startGnmic(t, g("subscribe", "--stream-mode", "on-change", "--updates-only", "--heartbeat-interval", "200ms",
			"--path", q0+"/config/alpha")...)
		p.waitFor(t, `"sync-response": true`)
		p.waitFor(t, `"alpha": 0.5`)
	})

	t.Run("commit confirmed", func(t *testing.T) {
		// A subscriber sees the commit applied, then rolled back.
		sub := startGnmic(t, g("subscribe", "--stream-mode", "on-change", "--path", q0+"/state/alpha")...)
		sub.waitFor(t, `"sync-response": true`)
		// Not confirmed: rolled back when the duration runs out. The
		// subscription shows the change and its rollback whatever the
		// load; nothing else runs inside the 1 s (a Get or Set could
		// land after the rollback on a busy machine).
		gnmicOK(t, g("set", "--commit-request", "--commit-id", "try-1", "--rollback-duration", "1s",
			"--update-path", q0+"/config/alpha", "--update-value", "0.25")...)
		sub.waitFor(t, `"alpha": 0.25`)
		deadline := time.Now().Add(30 * time.Second)
		for kmax(t) != "6250000" {
			if time.Now().After(deadline) {
				t.Fatalf("not rolled back within 30s: %s", kmax(t))
			}
			time.Sleep(100 * time.Millisecond) // polling with a deadline
		}
		sub.waitFor(t, `"alpha": 0.5`)
		sub.stop()
		// Confirmed: it stays.
		gnmicOK(t, g("set", "--commit-request", "--commit-id", "try-2", "--rollback-duration", "10m",
			"--update-path", q0+"/config/alpha", "--update-value", "0.25")...)
		wantKmax(t, "applied at once", "3125000")
		out, err := gnmic(t, g("set", "--update-path", q0+"/config/alpha", "--update-value", "0.75")...)
		if err == nil || !strings.Contains(out, "FailedPrecondition") {
			t.Errorf("Set while a commit is pending: %v, want FailedPrecondition:\n%s", err, out)
		}
		gnmicOK(t, g("set", "--commit-confirm", "--commit-id", "try-2")...)
		wantKmax(t, "confirmed", "3125000")
		// Cancelled: rolled back at once.
		gnmicOK(t, g("set", "--commit-request", "--commit-id", "try-3",
			"--update-path", q0+"/config/alpha", "--update-value", "0.5")...)
		wantKmax(t, "applied", "6250000")
		out, err = gnmic(t, g("set", "--commit-cancel", "--commit-id", "other")...)
		if err == nil || !strings.Contains(out, "InvalidArgument") {
			t.Errorf("cancel of another id: %v, want InvalidArgument:\n%s", err, out)
		}
		gnmicOK(t, g("set", "--commit-cancel", "--commit-id", "try-3")...)
		wantKmax(t, "cancelled", "3125000")
	})
}
