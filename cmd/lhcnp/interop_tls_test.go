package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
)

// TestInteropGnmicTLSUsers drives a switch served over TLS with a users
// file the way docs/gnmi-target.md says: gnmic --tls-ca with -u/-p; roles,
// wrong passwords and an untrusted certificate are refused with the codes
// an operator can act on.
func TestInteropGnmicTLSUsers(t *testing.T) {
	needGnmic(t)
	dir := t.TempDir()
	cert, key := servicetest.SelfSignedTLS(t, dir)
	var lines []string
	for _, u := range []struct {
		name string
		role auth.Role
	}{{"nms", auth.ReadOnly}, {"tuner", auth.ReadWrite}} {
		l, err := auth.PasswdLine(u.name, u.role, u.name+"-secret")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	users := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(users, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startSwitch(t, "--tls-cert", cert, "--tls-key", key, "--users", users)
	as := func(user, pw string, args ...string) []string {
		return append([]string{"-a", r.addr, "--tls-ca", cert, "-u", user, "-p", pw}, args...)
	}
	const alpha = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/config/alpha"

	out := gnmicOK(t, as("nms", "nms-secret", "get", "--path", "/lhcnp/interfaces/interface[name=wan0]/state/effective-rtt-est")...)
	wantIn(t, "read-only get", out, `"lhcnp/interfaces/interface/state/effective-rtt-est": 10000`)
	out = gnmicOK(t, as("nms", "nms-secret", "subscribe", "--mode", "once", "--path", "/lhcnp/global/state/enabled")...)
	wantIn(t, "read-only subscribe", out, `"enabled": true`)
	out = gnmicOK(t, as("tuner", "tuner-secret", "set", "--update-path", alpha, "--update-value", "0.5")...)
	wantIn(t, "read-write set", out, `"operation": "UPDATE"`)

	for _, tt := range []struct {
		desc string
		args []string
		want string
	}{
		{"read-only user sets", as("nms", "nms-secret", "set", "--update-path", alpha, "--update-value", "0.25"), "PermissionDenied"},
		{"wrong password", as("tuner", "guess", "get", "--path", alpha), "Unauthenticated"},
		{"no credentials", []string{"-a", r.addr, "--tls-ca", cert, "capabilities"}, "Unauthenticated"},
		{"certificate not trusted", []string{"-a", r.addr, "-u", "nms", "-p", "nms-secret", "--timeout", "3s", "capabilities"}, "certificate"},
		{"plaintext client", []string{"-a", r.addr, "--insecure", "-u", "nms", "-p", "nms-secret", "--timeout", "3s", "capabilities"}, "Unavailable"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			out, err := gnmic(t, tt.args...)
			if err == nil || !strings.Contains(out, tt.want) {
				t.Errorf("gnmic %q: %v, want a failure with %q:\n%s", tt.args, err, tt.want, out)
			}
		})
	}
}
