package pgserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
