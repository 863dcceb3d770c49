package main

import (
	"testing"
)

// TestInteropGNMICLIShapes drives the switch with the reference client
// (gnmi_cli, as `go tool gnmi_cli` runs it) with the value and path shapes
// it lets users write: json_val and json_ietf_val values, leaves and
// subtrees, PROTO and JSON Gets, an origin on the path, a target in the
// prefix (TestInteropGNMICLI covers the RPCs and subscription modes).
func TestInteropGNMICLIShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gnmi_cli")
	}
	r := startSwitch(t)
	q0 := `elem: <name: "lhcnp"> elem: <name: "interfaces"> elem: <name: "interface" key: <key: "name" value: "wan0">> elem: <name: "queues"> elem: <name: "queue" key: <key: "id" value: "0">>`
	kmax := func(t *testing.T, want string) {
		t.Helper()
		out := cli(t, r.addr, "-get", "-proto", `path: <origin: "lhcnp" `+q0+` elem: <name: "state"> elem: <name: "effective-kmax">> type: STATE encoding: PROTO`)
		wantAll(t, "effective-kmax", out, `uint_val: `+want)
	}
	for _, tt := range []struct {
		desc, set, kmax string
	}{
		{"decimal64 as json_val (a JSON number)", `update: <path: <` + q0 + ` elem: <name: "config"> elem: <name: "alpha">> val: <json_val: "0.5">>`, "6250000"},
		{"decimal64 as a bare number in json_ietf_val", `update: <path: <` + q0 + ` elem: <name: "config"> elem: <name: "alpha">> val: <json_ietf_val: "0.25">>`, "3125000"},
		{"decimal64 as double_val, prefix with a target", `prefix: <target: "n1" ` + q0 + `> update: <path: <elem: <name: "config"> elem: <name: "alpha">> val: <double_val: 0.75>>`, "9375000"},
		{"a subtree in json_val, numbers as numbers", `update: <path: <` + q0 + ` elem: <name: "config">> val: <json_val: "{\"kmax-mode\": \"EXPLICIT\", \"kmax\": 3000000}">>`, "3000000"},
		{"a subtree in json_ietf_val, module-qualified names", `replace: <path: <origin: "lhcnp" ` + q0 + ` elem: <name: "config">> val: <json_ietf_val: "{\"lhcnp:id\": 0}">>`, "12500000"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			out := cli(t, r.addr, "-set", "-proto", tt.set)
			wantAll(t, "set", out, "timestamp:")
			kmax(t, tt.kmax)
		})
	}
	t.Run("get JSON of a list entry: lists as arrays", func(t *testing.T) {
		out := cli(t, r.addr, "-get", "-proto", `path: <elem: <name: "lhcnp"> elem: <name: "interfaces"> elem: <name: "interface" key: <key: "name" value: "wan0">> elem: <name: "queues">> type: CONFIG encoding: JSON`)
		wantAll(t, "get JSON", out, `json_val: "{\"queue\":[{`, `\"rate-reduce-percent\":30`)
	})
	t.Run("subscribe once with a target", func(t *testing.T) {
		out := cli(t, r.addr, "-qt", "once", "-dt", "p", "-t", "n1", "-q", "lhcnp/global/state/enabled")
		wantAll(t, "subscribe once", out, `target: "n1"`, `json_val: "true"`, "sync_response: true")
	})
}
