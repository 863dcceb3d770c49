package pgserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// requireCitus skips (or fails, under CI or LHCNP_ORACLES=required) when
// the server binaries or Citus are missing.
func requireCitus(t *testing.T) {
	t.Helper()
	requireBinaries(t)
	if err := FindCitus(); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

func TestFindCitusMissing(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "15", "bin")
	if err := findCitus(bin); !errors.Is(err, ErrCitusNotInstalled) {
		t.Errorf("findCitus(%s) = %v, want ErrCitusNotInstalled", bin, err)
	}
}

// TestCluster starts a coordinator and two workers, makes a database
// distributed, spreads a table over the workers and stops every node.
func TestCluster(t *testing.T) {
	requireCitus(t)
	ctx := context.Background()
	c, err := StartCluster(ctx, 2, WithoutDurability(), WithSetting("citus.shard_count", "4"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ports := map[int]bool{}
	dirs := map[string]bool{}
	for _, s := range c.Nodes() {
		ports[s.Port()], dirs[s.DataDir()] = true, true
	}
	if len(ports) != 3 || len(dirs) != 3 {
		t.Fatalf("nodes share ports %v or data directories %v", ports, dirs)
	}
	if err := c.CreateDatabase(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	withConn(t, c.DSN("d"), func(ctx context.Context, conn *pgx.Conn) error {
		type node struct {
			Port   int
			Role   string
			Shards int64
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE t (id bigint PRIMARY KEY);
			SELECT create_distributed_table('t', 'id');
			INSERT INTO t SELECT generate_series(1, 1000)`); err != nil {
			return err
		}
		rows, err := conn.Query(ctx, `SELECT n.nodeport, n.noderole::text, count(s.shardid)
			FROM pg_dist_node n LEFT JOIN citus_shards s ON s.nodeport = n.nodeport AND s.table_name = 't'::regclass
			GROUP BY 1, 2 ORDER BY 1`)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[node])
		if err != nil {
			return err
		}
		want := []node{}
		for _, s := range c.Nodes() {
			shards := int64(2)
			if s == c.Coordinator {
				shards = 0
			}
			want = append(want, node{Port: s.Port(), Role: "primary", Shards: shards})
		}
		slices.SortFunc(want, func(a, b node) int { return a.Port - b.Port })
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("nodes and their shards of t (-want +got):\n%s", d)
		}
		var n, sum int64
		if err := conn.QueryRow(ctx, "SELECT count(*), sum(id) FROM t").Scan(&n, &sum); err != nil {
			return err
		}
		if n != 1000 || sum != 500500 {
			t.Errorf("count, sum = %d, %d; want 1000, 500500", n, sum)
		}
		return nil
	})
	if err := c.DropDatabase(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Nodes() {
		if s.Running() {
			t.Errorf("node on port %d still running after Close", s.Port())
		}
		if _, err := os.Stat(s.DataDir()); !os.IsNotExist(err) {
			t.Errorf("data directory %s not removed: %v", s.DataDir(), err)
		}
	}
}

// TestClusterInKeepsItsData: a cluster started in a directory (a lab's
// state directory) comes back on the same ports, with its nodes and its
// distributed rows, at the next start; EnsureDatabase is a no-op for what
// exists. A start with fewer workers than the directory holds is refused.
func TestClusterInKeepsItsData(t *testing.T) {
	requireCitus(t)
	ctx := context.Background()
	dir := stateDir(t)
	start := func() *Cluster {
		t.Helper()
		c, err := StartClusterIn(ctx, dir, 0, 2, WithoutDurability(), WithSetting("citus.shard_count", "4"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.EnsureDatabase(ctx, "d"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := start()
	if got, want := c.Workers[1].DataDir(), filepath.Join(dir, "worker-2"); got != want {
		t.Errorf("second worker's data directory %s, want %s", got, want)
	}
	withConn(t, c.DSN("d"), func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `CREATE TABLE t (id bigint PRIMARY KEY);
			SELECT create_distributed_table('t', 'id');
			INSERT INTO t SELECT generate_series(1, 1000)`)
		return err
	})
	first := portsOf(c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = start()
	if got := portsOf(c); !slices.Equal(got, first) {
		t.Errorf("ports %v at the second start, want the first's %v", got, first)
	}
	withConn(t, c.DSN("d"), func(ctx context.Context, conn *pgx.Conn) error {
		var n, sum int64
		if err := conn.QueryRow(ctx, "SELECT count(*), sum(id) FROM t").Scan(&n, &sum); err != nil {
			return err
		}
		if n != 1000 || sum != 500500 {
			t.Errorf("after a restart: count, sum = %d, %d; want 1000, 500500", n, sum)
		}
		var workers int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_dist_node WHERE groupid <> 0").Scan(&workers); err != nil {
			return err
		}
		if workers != 2 {
			t.Errorf("%d workers registered after a restart, want 2", workers)
		}
		return nil
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := StartClusterIn(ctx, dir, 0, 1); err == nil || !strings.Contains(err.Error(), "has 2 workers") {
		t.Errorf("a start with 1 worker of 2: %v, want an error saying the cluster has 2 workers", err)
	}
}

func portsOf(c *Cluster) []int {
	var ports []int
	for _, s := range c.Nodes() {
		ports = append(ports, s.Port())
	}
	return ports
}

// TestWriteClusterPorts: the ports file is replaced whole (mode 0644) and
// read back; no temporary file is left beside it; a missing file is no
// ports, a damaged one an error naming it.
func TestWriteClusterPorts(t *testing.T) {
	dir := t.TempDir()
	if got, err := readClusterPorts(dir); err != nil || got.Coordinator != 0 || got.Workers != nil {
		t.Fatalf("readClusterPorts of an empty directory: %+v, %v; want none", got, err)
	}
	for _, want := range []clusterPorts{
		{Coordinator: 5432, Workers: []int{5433, 5434}},
		{Coordinator: 6000, Workers: []int{6001}},
	} {
		if err := writeClusterPorts(dir, want); err != nil {
			t.Fatal(err)
		}
		got, err := readClusterPorts(dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("readClusterPorts (-want, +got):\n%s", diff)
		}
		if st, err := os.Stat(filepath.Join(dir, portsFile)); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", portsFile, st.Mode().Perm(), err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%d files in the cluster directory, want %s alone", len(entries), portsFile)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, portsFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readClusterPorts(dir); err == nil || !strings.Contains(err.Error(), portsFile) {
		t.Errorf("readClusterPorts of a damaged file: %v, want an error naming %s", err, portsFile)
	}
}
