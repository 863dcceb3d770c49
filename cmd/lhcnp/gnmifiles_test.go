package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
)

// TestGNMIFilesAreConfiguration: the users file and the TLS files a
// switch's or the collector's northbound keys name are files the
// configuration names, so one that is missing or does not load is a
// mistake of the configuration (docs/collector.md, "Exit status"): exit
// status 2, one line naming where the key came from, the key and the
// file's own error, before anything starts (the collector's database,
// unreachable here, is never tried). Before, each was exit status 1; the
// switch's named neither the key nor its origin (`lhcnp switch: open
// nofile: no such file or directory`), and the collector found its
// northbound's once connected to the database.
func TestGNMIFilesAreConfiguration(t *testing.T) {
	dir := t.TempDir()
	cert, key := servicetest.SelfSignedTLS(t, dir)
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badRole := write("bad-role.txt", "nms:admin:$2a$10$0o7Qb0m0t6tYw8ZQ2m8o6e1y8G6C7f6eU7mF3Gmn8cJtq4u8yq0aW\n", 0o600)
	badLine := write("bad-line.txt", "nms\n", 0o600)
	notPEM := write("ca.txt", "not a certificate\n", 0o600)
	missing := filepath.Join(dir, "missing")
	sw := []string{"switch", "--config", "../../examples/switch.yaml", "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state")}
	switchFile := write("switch.yaml", "switch: n1\nscenario: "+mustAbs(t, "../../examples/switch-scenario.yaml")+"\ninsecure: true\nusers: "+badLine+"\n", 0o600)
	col := []string{"collector", "--db.dsn", "postgres://x@127.0.0.1:1/x", "--state-dir", filepath.Join(dir, "collector"),
		"--metrics.listen", "127.0.0.1:0", "--northbound.listen", "127.0.0.1:0"}
	for _, tt := range []struct {
		desc string
		env  []string
		args []string
		want string
	}{
		{"switch users line", nil, append(sw, "--insecure", "--users", badRole),
			`lhcnp switch: --users: users: ` + badRole + `:1: bad users file: unknown role "admin": want read-only or read-write`},
		{"switch users missing, of a variable", []string{"LHCNP_SWITCH_USERS=" + missing}, append(sw, "--insecure"),
			"lhcnp switch: LHCNP_SWITCH_USERS: users: open " + missing + ": no such file or directory"},
		{"switch users of the file", nil, []string{"switch", "--config", switchFile, "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state")},
			"lhcnp switch: " + switchFile + ":4:8: users: " + badLine + ":1: bad users file: want name:role:bcrypt-hash"},
		{"switch certificate missing", nil, append(sw, "--tls-cert", missing, "--tls-key", key, "--client-ca", cert),
			"lhcnp switch: --tls-cert: tls_cert: loading server certificate: stat " + missing + ": no such file or directory"},
		{"switch key missing", nil, append(sw, "--tls-cert", cert, "--tls-key", missing, "--client-ca", cert),
			"lhcnp switch: --tls-key: tls_key: stat " + missing + ": no such file or directory"},
		{"switch client CA not PEM", nil, append(sw, "--tls-cert", cert, "--tls-key", key, "--client-ca", notPEM),
			"lhcnp switch: --client-ca: client_ca: loading client CA: " + notPEM + ": no PEM certificates"},
		{"collector northbound users", nil, append(col, "--northbound.insecure", "--northbound.users", badLine),
			"lhcnp collector: --northbound.users: northbound.users: " + badLine + ":1: bad users file: want name:role:bcrypt-hash"},
		{"collector northbound client CA, of a variable", []string{"LHCNP_COLLECTOR_NORTHBOUND_CLIENT_CA=" + missing},
			append(col, "--northbound.tls-cert", cert, "--northbound.tls-key", key),
			"lhcnp collector: LHCNP_COLLECTOR_NORTHBOUND_CLIENT_CA: northbound.client_ca: loading client CA: open " + missing + ": no such file or directory"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != 2 || lines[len(lines)-1] != tt.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and the last line\n%s", code, stderr.String(), tt.want)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
