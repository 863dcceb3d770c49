package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/server/fabric"
)

// TestStateDirLocked: a second lab on a state directory in use is refused
// with ErrInUse naming the holder; once released, the directory is free.
func TestStateDirLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := lockStateDir(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockStateDir(dir, dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "pid ") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want ErrInUse naming the directory and the pid", err)
	}
	first.Release()
	again, err := lockStateDir(dir, dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
}

// TestStartRefusesBusyAddress: with an address of the lab taken, Start
// fails with ErrInUse naming the flag that chooses another (and the file
// when the address was kept from an earlier start), before it starts
// PostgreSQL or anything else (Config.Checked is not called), and leaves
// the state directory unlocked.
func TestStartRefusesBusyAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	_, port, _ := net.SplitHostPort(taken)
	takenPort, _ := strconv.Atoi(port)
	free := "127.0.0.1:0"
	tests := []struct {
		desc string
		cfg  Config
		kept *Addresses // the addresses file of an earlier start
		want []string
	}{
		{desc: "dashboard", cfg: Config{HTTPAddr: taken}, want: []string{"dashboard address " + taken, "--http"}},
		{desc: "collector metrics", cfg: Config{HTTPAddr: free, MetricsAddr: taken}, want: []string{"collector metrics address " + taken, "--metrics"}},
		{desc: "postgresql", cfg: Config{HTTPAddr: free, MetricsAddr: free, PostgresPort: takenPort},
			want: []string{"postgresql address " + taken, "--postgres-port"}},
		{desc: "kept dashboard", cfg: Config{HTTPAddr: free}, kept: &Addresses{Dashboard: "http://" + taken + "/"},
			want: []string{"dashboard address " + taken, "--http", AddressesFile}},
		{desc: "kept postgresql port", cfg: Config{HTTPAddr: free, MetricsAddr: free},
			kept: &Addresses{PrivatePG: true, PostgresDSN: "postgres://postgres@" + taken + "/lhcnp?sslmode=disable"},
			want: []string{"postgresql address " + taken, "--postgres-port", AddressesFile}},
		{desc: "collector northbound", cfg: Config{HTTPAddr: free, MetricsAddr: free, Northbound: config.Northbound{Listen: taken}, NorthboundServer: noNorthbound{}},
			want: []string{"collector northbound address " + taken, "--northbound"}},
		{desc: "kept collector northbound", cfg: Config{HTTPAddr: free, MetricsAddr: free, Northbound: config.Northbound{Listen: free}, NorthboundServer: noNorthbound{}},
			kept: &Addresses{Northbound: taken}, want: []string{"collector northbound address " + taken, "--northbound", AddressesFile}},
		{desc: "switch", cfg: Config{HTTPAddr: free, MetricsAddr: free, Fabric: fabric.Config{Switches: []fabric.Switch{{Name: "n1", Listen: taken}}}},
			want: []string{"switch n1 gNMI address " + taken, "--listen"}},
		{desc: "kept switch", cfg: Config{HTTPAddr: free, MetricsAddr: free, Fabric: fabric.Config{Switches: []fabric.Switch{{Name: "n1", Listen: free}}}},
			kept: &Addresses{Switches: map[string]string{"n1": taken}}, want: []string{"switch n1 gNMI address " + taken, "--listen", AddressesFile}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			dir := t.TempDir()
			if tt.kept != nil {
				if err := writeAddresses(dir, *tt.kept); err != nil {
					t.Fatal(err)
				}
			}
			tt.cfg.StateDir = dir
			tt.cfg.Checked = func() { t.Error("Checked was called: a refused start is said alone") }
			_, err := Start(context.Background(), tt.cfg)
			if !errors.Is(err, ErrInUse) {
				t.Fatalf("Start: %v, want ErrInUse", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Start: %v, want it to name %q", err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "postgres")); !os.IsNotExist(err) {
				t.Errorf("a postgres directory was made (%v): nothing should start before the addresses are ours", err)
			}
			l, err := lockStateDir(dir, dir)
			if err != nil {
				t.Fatalf("the failed start kept the state directory locked: %v", err)
			}
			l.Release()
		})
	}
}

// noNorthbound is a NorthboundServer for a start that never serves.
type noNorthbound struct{}

func (noNorthbound) Options(config.Northbound) []collector.Option { return nil }

func (noNorthbound) Serve(context.Context, config.Northbound, *collector.Collector, net.Listener) (func(), error) {
	return nil, errors.New("not served")
}

// TestKeep: a port 0 takes the last start's address on the same host;
// a fixed port stays.
func TestKeep(t *testing.T) {
	tests := []struct {
		desc, configured, kept, want string
	}{
		{desc: "nothing kept", configured: "127.0.0.1:0", want: "127.0.0.1:0"},
		{desc: "kept host:port", configured: "127.0.0.1:0", kept: "127.0.0.1:4242", want: "127.0.0.1:4242"},
		{desc: "kept URL", configured: "127.0.0.1:0", kept: "http://127.0.0.1:4242/metrics", want: "127.0.0.1:4242"},
		{desc: "kept DSN", configured: "127.0.0.1:0", kept: "postgres://postgres@127.0.0.1:4242/lhcnp?sslmode=disable", want: "127.0.0.1:4242"},
		{desc: "another host", configured: "0.0.0.0:0", kept: "127.0.0.1:4242", want: "0.0.0.0:0"},
		{desc: "a fixed port wins", configured: "127.0.0.1:8080", kept: "127.0.0.1:4242", want: "127.0.0.1:8080"},
		{desc: "kept port 0", configured: "127.0.0.1:0", kept: "127.0.0.1:0", want: "127.0.0.1:0"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := keep(tt.configured, tt.kept); got != tt.want {
				t.Errorf("keep(%q, %q) = %q, want %q", tt.configured, tt.kept, got, tt.want)
			}
		})
	}
}

// TestCollectorRetention: the lab's collector enforces the lab's retention
// in its private database (db.retention set), 0 too: everything kept, not
// the database's own 30 days (a collector's db.retention unset), nor the 7
// days of the collector's former default.
func TestCollectorRetention(t *testing.T) {
	maintain := func(context.Context, *pgxpool.Pool, *time.Duration) error { return nil }
	for _, tt := range []struct {
		desc     string
		keep     time.Duration
		maintain bool
		want     time.Duration
		interval time.Duration
	}{
		{desc: "30m", keep: 30 * time.Minute, maintain: true, want: 30 * time.Minute, interval: 3 * time.Minute},
		{desc: "0 keeps everything", keep: 0, maintain: true, want: 0, interval: time.Hour},
		{desc: "no passes", keep: 30 * time.Minute, want: 0, interval: time.Hour},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cc := config.Defaults().DB
			var db collector.DB
			if tt.maintain {
				db.Maintain = maintain
			}
			collectorRetention(&cc, db, tt.keep, 0)
			keep, set, err := cc.RetentionKeep()
			if err != nil || !set || keep != tt.want || cc.MaintainInterval != tt.interval {
				t.Errorf("db.retention %q (set %v, %v), maintain_interval %v; want %v enforced every %v", cc.Retention, set, err, cc.MaintainInterval, tt.want, tt.interval)
			}
		})
	}
}

// TestRetentionPass: a pass every tenth of the retention, within [30 s,
// 5 min], unless set.
func TestRetentionPass(t *testing.T) {
	tests := []struct {
		desc             string
		keep, pass, want time.Duration
	}{
		{desc: "a tenth", keep: 30 * time.Minute, want: 3 * time.Minute},
		{desc: "at least 30 s", keep: 2 * time.Minute, want: 30 * time.Second},
		{desc: "at most 5 min", keep: 24 * time.Hour, want: 5 * time.Minute},
		{desc: "set", keep: 30 * time.Minute, pass: time.Second, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := retentionPass(tt.keep, tt.pass); got != tt.want {
				t.Errorf("retentionPass(%v, %v) = %v, want %v", tt.keep, tt.pass, got, tt.want)
			}
		})
	}
}
