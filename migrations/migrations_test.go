package migrations_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var emptySeq atomic.Int64

// emptyDB creates a database without any schema on the shared cluster and
// returns its DSN; it is dropped when the test ends.
func emptyDB(t *testing.T) string {
	t.Helper()
	srv := pgtest.Server(t)
	name := fmt.Sprintf("empty_%d", emptySeq.Add(1))
	ctx := context.Background()
	if err := srv.CreateDatabase(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.DropDatabase(context.Background(), name); err != nil {
			t.Error(err)
		}
	})
	return srv.DSN(name)
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// objects lists the schema's own objects in public: tables (with partitions),
// views and functions, and the extensions installed.
func objects(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return column(t, conn, `
		SELECT 'table ' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v') AND c.relname <> 'lhcnp_schema_version'
		UNION ALL
		SELECT 'function ' || p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname = 'public'
		UNION ALL
		SELECT 'extension ' || extname FROM pg_extension WHERE extname <> 'plpgsql'
		ORDER BY 1`)
}

// column runs sql and returns its one text column.
func column(t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

var managers = []string{"pg_partman", "lhcnp"}

// TestUpDownStatus walks the schema up (status and progress), then, for
// every version N below the latest, from N up to the latest and down to N
// again, and compares the catalogue each time with pg_dump --schema-only:
// the dump at N before and after, the dump at the latest with the first.
// Function attributes (volatility, PARALLEL SAFE), view bodies, comments,
// constraints and partitions are compared, not only object names. All the
// way down leaves the empty database's catalogue; with each partition
// manager.
//
// The managers' walks, each in its own database, run at once (and beside
// TestUpDownStatusCitus): about 75 pg_dumps each, the test's time, which
// are mostly round trips between pg_dump and the server, so two walks take
// little more than one.
func TestUpDownStatus(t *testing.T) {
	t.Parallel()
	for _, manager := range managers {
		t.Run(manager, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := emptyDB(t)
			conn := connect(t, dsn)
			opt := migrations.WithPartitionManager(manager)
			latest := migrations.Latest()
			if latest < 3 {
				t.Fatalf("Latest() = %d, want at least 3 migrations", latest)
			}

			st, err := migrations.GetStatus(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if st.Current != 0 || st.Latest != latest || !st.Pending() || len(st.Steps) != int(latest) {
				t.Fatalf("status of an empty database = %+v", st)
			}
			// The version table, which all the way down keeps.
			if err := migrations.To(ctx, conn, 0); err != nil {
				t.Fatal(err)
			}
			empty := schemaDump(t, dsn)

			var applied []string
			progress := migrations.WithProgress(func(seq int32, name, dir string) {
				applied = append(applied, fmt.Sprintf("%s %d %s", dir, seq, name))
			})
			if err := migrations.Up(ctx, conn, opt, progress); err != nil {
				t.Fatal(err)
			}
			if len(applied) != int(latest) || !strings.HasPrefix(applied[0], "up 1 001_") {
				t.Errorf("progress = %q", applied)
			}
			st, err = migrations.GetStatus(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if st.Current != latest || st.Pending() {
				t.Fatalf("after Up: %+v", st)
			}
			for _, s := range st.Steps {
				if !s.Applied {
					t.Errorf("step %d %s not applied after Up", s.Sequence, s.Name)
				}
			}
			full := objects(t, conn)
			for _, want := range []string{"table samples", "table targets", "table tuner_actions", "table queue_latest", "function lhcnp_maintain", "function queue_congestion_between"} {
				if !contains(full, want) {
					t.Errorf("after Up, %s missing from %q", want, full)
				}
			}
			if got := contains(full, "extension pg_partman"); got != (manager == "pg_partman") {
				t.Errorf("extension pg_partman installed = %v with manager %s", got, manager)
			}
			fullDump := schemaDump(t, dsn)

			var back []string // the catalogue at n after the walk up and down
			for n := latest - 1; n >= 0; n-- {
				if err := migrations.To(ctx, conn, n, opt); err != nil {
					t.Fatal(err)
				}
				if st, _ := migrations.GetStatus(ctx, conn); st.Current != n {
					t.Fatalf("after To(%d): version %d", n, st.Current)
				}
				atN := schemaDump(t, dsn)
				if err := migrations.Up(ctx, conn, opt); err != nil {
					t.Fatalf("up from %d: %v", n, err)
				}
				if d := cmp.Diff(fullDump, schemaDump(t, dsn)); d != "" {
					t.Errorf("down to %d and up again: the catalogue differs (-first up +again):\n%s", n, d)
				}
				if err := migrations.To(ctx, conn, n, opt); err != nil {
					t.Fatal(err)
				}
				back = schemaDump(t, dsn)
				if d := cmp.Diff(atN, back); d != "" {
					t.Errorf("at %d, up to %d and down again: the catalogue differs (-before +after):\n%s", n, latest, d)
				}
			}
			// At 0 now: the last dump is the catalogue all the way down.
			if d := cmp.Diff(empty, back); d != "" {
				t.Errorf("all the way down left the catalogue changed (-empty database +after):\n%s", d)
			}
			if err := migrations.Up(ctx, conn, opt); err != nil {
				t.Fatalf("up after a full down: %v", err)
			}
			if d := cmp.Diff(fullDump, schemaDump(t, dsn)); d != "" {
				t.Errorf("up after a full down (-first up +again):\n%s", d)
			}
		})
	}
}

// TestUpDownStatusCitus walks the schema on a Citus coordinator with two
// workers, with each partition manager: up to the latest (migration 011
// distributes the tables: GetMode lists them), down one step (the tables
// back on the coordinator) and up again, all the way down and up again,
// comparing pg_dump --schema-only of the coordinator each time as
// TestUpDownStatus does; and the schema's objects at the latest are those of
// plain PostgreSQL, with Citus's extension and the single-node
// lhcnp_carry_forward kept aside by 011. Partition maintenance (pg_partman
// or the fallback, with the carry-forward of 008) runs on the distributed
// samples.
func TestUpDownStatusCitus(t *testing.T) {
	t.Parallel()
	plain := map[string][]string{}
	for _, manager := range managers {
		conn := connect(t, emptyDB(t))
		if err := migrations.Up(context.Background(), conn, migrations.WithPartitionManager(manager)); err != nil {
			t.Fatal(err)
		}
		plain[manager] = objects(t, conn)
	}
	for _, manager := range managers {
		t.Run(manager, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := pgtest.EmptyCitus(t)
			conn := connect(t, dsn)
			opt := migrations.WithPartitionManager(manager)
			latest := migrations.Latest()
			if err := migrations.To(ctx, conn, 0); err != nil { // creates the version table
				t.Fatal(err)
			}
			empty := schemaDump(t, dsn)
			if err := migrations.To(ctx, conn, 10, opt); err != nil {
				t.Fatal(err)
			}
			mode, err := migrations.GetMode(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(migrations.Mode{CitusInstalled: true, Workers: pgtest.CitusWorkers}, mode); d != "" {
				t.Errorf("mode at 10 (-want +got):\n%s", d)
			}
			at10 := schemaDump(t, dsn)
			if err := migrations.Up(ctx, conn, opt); err != nil {
				t.Fatal(err)
			}
			mode, err = migrations.GetMode(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			want := migrations.Mode{Citus: true, CitusInstalled: true, Workers: pgtest.CitusWorkers, Distributed: []string{
				"collectors: reference", "dead_letters: reference", "events: by target", "ingest_ledger: by shard_key",
				"latest: by series_id", "leases: reference", "lhcnp_carried_leaves: reference", "samples: by series_id",
				"series: reference", "stale_deletes: by series_id", "tuner_actions: reference"}}
			if d := cmp.Diff(want, mode); d != "" {
				t.Errorf("mode at the latest (-want +got):\n%s", d)
			}
			var colocated int
			if err := conn.QueryRow(ctx, `SELECT count(DISTINCT colocation_id) FROM citus_tables
				WHERE table_name IN ('samples'::regclass, 'latest'::regclass, 'ingest_ledger'::regclass, 'stale_deletes'::regclass)`).Scan(&colocated); err != nil {
				t.Fatal(err)
			}
			if colocated != 1 {
				t.Errorf("samples, latest, ingest_ledger and stale_deletes in %d colocation groups, want 1", colocated)
			}
			got := objects(t, conn)
			wantObjects := append(slices.Clone(plain[manager]), "extension citus", "extension citus_columnar",
				"function lhcnp_carry_forward_single_node", "table citus_schemas", "table citus_tables")
			slices.Sort(wantObjects)
			slices.Sort(got)
			if d := cmp.Diff(wantObjects, got); d != "" {
				t.Errorf("objects on Citus (-plain PostgreSQL and Citus's +got):\n%s", d)
			}
			if _, err := conn.Exec(ctx, `SELECT lhcnp_set_retention('30 days'); SELECT lhcnp_maintain()`); err != nil {
				t.Fatalf("maintenance on Citus: %v", err)
			}
			full := schemaDump(t, dsn)
			for _, step := range []struct {
				to   int32
				want []string
			}{
				{10, at10}, {latest, full}, {0, empty}, {latest, full},
			} {
				if err := migrations.To(ctx, conn, step.to, opt); err != nil {
					t.Fatalf("to %d: %v", step.to, err)
				}
				if d := cmp.Diff(step.want, schemaDump(t, dsn)); d != "" {
					t.Errorf("at %d again, the catalogue differs (-before +after):\n%s", step.to, d)
				}
			}
		})
	}
}

// schemaDump is pg_dump --schema-only of the database at dsn (pg_dump of
// the server binaries the tests run), line by line, without its per-run
// lines (the \restrict key of pg_dump 15.14 and later).
func schemaDump(t *testing.T, dsn string) []string {
	t.Helper()
	bin, err := pgserver.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bin, "pg_dump"), "--schema-only", "--no-password", "--dbname", dsn)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pg_dump: %v: %s", err, stderr.String())
	}
	var kept []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, `\restrict `) || strings.HasPrefix(line, `\unrestrict `) {
			continue
		}
		kept = append(kept, line)
	}
	return kept
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestConcurrentUp: collectors starting together migrate once; the
// advisory lock makes the others wait and find nothing to do.
func TestConcurrentUp(t *testing.T) {
	dsn := emptyDB(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		conns[i] = connect(t, dsn)
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = migrations.Up(context.Background(), conns[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrator %d: %v", i, err)
		}
	}
	st, err := migrations.GetStatus(context.Background(), conns[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != migrations.Latest() {
		t.Errorf("version %d after concurrent Up, want %d", st.Current, migrations.Latest())
	}
}

func TestBadPartitionManager(t *testing.T) {
	conn := connect(t, emptyDB(t))
	err := migrations.Up(context.Background(), conn, migrations.WithPartitionManager("timescale"))
	if err == nil || !strings.Contains(err.Error(), `"timescale"`) {
		t.Fatalf("err = %v, want one naming the bad manager", err)
	}
}

// partitions lists the daily partitions of samples by their day suffix.
func partitions(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return column(t, conn, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'samples'::regclass ORDER BY 1`)
}

func day(offset int) string {
	return "samples_p" + time.Now().UTC().AddDate(0, 0, offset).Format("2006_01_02")
}

func count(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestPartitions: with either manager, partitions exist from yesterday to
// four days ahead, rows outside them land in the default partition, and the
// retention drops old data at the next maintenance pass while keeping the
// rest.
func TestPartitions(t *testing.T) {
	for _, manager := range managers {
		t.Run(manager, func(t *testing.T) {
			ctx := context.Background()
			conn := connect(t, emptyDB(t))
			if err := migrations.Up(ctx, conn, migrations.WithPartitionManager(manager)); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := conn.QueryRow(ctx, `SELECT manager FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != manager {
				t.Fatalf("manager = %s, want %s", got, manager)
			}
			// Yesterday to premake_days (4) ahead; pg_partman's
			// create_parent the four days before too, and at some hours
			// one day more ahead (22:11 UTC, not 00:17: a day more is
			// taken, not asked) (docs/collector.md, "Partitions and
			// retention").
			from := -1
			if manager == "pg_partman" {
				from = -4
			}
			want := []string{"samples_default"}
			for d := from; d <= 4; d++ {
				want = append(want, day(d))
			}
			parts := partitions(t, conn)
			if manager == "pg_partman" {
				parts = slices.DeleteFunc(parts, func(p string) bool { return p == day(5) })
			}
			if diff := cmp.Diff(want, parts); diff != "" {
				t.Errorf("partitions of a new schema (-want +got):\n%s", diff)
			}

			insert := `INSERT INTO samples (ts, series_id, v_int, batch_id) VALUES (now() + $1::interval, 1, $2, 1)`
			for _, r := range []struct {
				offset string
				v      int
			}{{"0", 1}, {"-1 day", 2}, {"-20 days", 3}, {"-40 days", 4}, {"2 days", 5}, {"400 days", 6}} {
				if _, err := conn.Exec(ctx, insert, r.offset, r.v); err != nil {
					t.Fatalf("insert at now%s: %v", r.offset, err)
				}
			}
			if n := count(t, conn, `SELECT count(*) FROM samples_default`); n < 2 {
				t.Errorf("%d rows in samples_default, want the ones 40 days ago and 400 days ahead at least", n)
			}
			if err := migrations.SetRetention(ctx, conn, 10*24*time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Maintain(ctx, conn); err != nil {
				t.Fatal(err)
			}
			rows, err := conn.Query(ctx, `SELECT v_int FROM samples ORDER BY v_int`)
			if err != nil {
				t.Fatal(err)
			}
			kept, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{1, 2, 5, 6}, kept); diff != "" {
				t.Errorf("rows kept with a 10-day retention (-want +got):\n%s", diff)
			}
			for _, p := range partitions(t, conn) {
				if p != "samples_default" && p < day(-11) {
					t.Errorf("partition %s older than the retention still there", p)
				}
			}

			// Retention off: nothing more is dropped.
			if err := migrations.SetRetention(ctx, conn, 0); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Maintain(ctx, conn); err != nil {
				t.Fatal(err)
			}
			if n := count(t, conn, `SELECT count(*) FROM samples`); n != 4 {
				t.Errorf("%d rows after a pass without retention, want 4", n)
			}
		})
	}
}

// TestFallbackMovesDefaultRows: the plain-SQL fallback creating a day's
// partition moves that day's rows out of the default partition.
func TestFallbackMovesDefaultRows(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, emptyDB(t))
	if err := migrations.Up(ctx, conn, migrations.WithPartitionManager("lhcnp")); err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC().AddDate(0, 0, 30)
	if _, err := conn.Exec(ctx, `INSERT INTO samples (ts, series_id, v_int, batch_id) VALUES ($1, 7, 70, 1), ($1, 7, 71, 1)`, ts); err != nil {
		t.Fatal(err)
	}
	var created bool
	if err := conn.QueryRow(ctx, `SELECT lhcnp_create_daily_partition('samples', $1::date)`, ts.Format("2006-01-02")).Scan(&created); err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("partition reported as existing")
	}
	child := day(30)
	if n := count(t, conn, `SELECT count(*) FROM `+child); n != 2 {
		t.Errorf("%d rows in %s, want 2", n, child)
	}
	if n := count(t, conn, `SELECT count(*) FROM samples_default`); n != 0 {
		t.Errorf("%d rows left in samples_default, want 0", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM samples`); n != 2 {
		t.Errorf("%d rows in samples, want 2", n)
	}
}

// TestTargetsNotify: an NMS's INSERT, UPDATE and DELETE on targets reach a
// listener on lhcnp_targets with the target's name, and updated_at moves.
func TestTargetsNotify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, dsn := pgtest.New(t)
	listener := connect(t, dsn)
	if _, err := listener.Exec(ctx, "LISTEN lhcnp_targets"); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO targets (name, address, subscriptions) VALUES ('n1', '127.0.0.1:9339', '[{"paths": ["/lhcnp"], "mode": "sample"}]')`,
		`UPDATE targets SET enabled = false WHERE name = 'n1'`,
		`UPDATE targets SET name = 'n2' WHERE name = 'n1'`,
		`DELETE FROM targets WHERE name = 'n2'`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var got []string
	for len(got) < 5 {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, n.Payload)
	}
	if diff := cmp.Diff([]string{"n1", "n1", "n1", "n2", "n2"}, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}

	if _, err := pool.Exec(ctx, `INSERT INTO targets (name, address, subscriptions) VALUES ('bad', 'x:1', '{"paths": []}')`); err == nil {
		t.Error("subscriptions that are not a list accepted")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO targets (name, address) VALUES ('t', 'x:1')`); err != nil {
		t.Fatal(err)
	}
	var created, updated time.Time
	if _, err := pool.Exec(ctx, `UPDATE targets SET address = 'y:2' WHERE name = 't'`); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT created_at, updated_at FROM targets WHERE name = 't'`).Scan(&created, &updated); err != nil {
		t.Fatal(err)
	}
	if updated.Before(created) {
		t.Errorf("updated_at %v before created_at %v", updated, created)
	}
}

// TestStatusWritesNothing: GetStatus (`lhcnp migrate status`) of a database
// without lhcnp's schema says version 0 with every step pending, and
// leaves no table behind, also for a role that may not create one. It
// created lhcnp_schema_version in whatever database it was pointed at, and
// such a role's status failed with "permission denied for schema public".
func TestStatusWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := emptyDB(t)
	admin := connect(t, dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	role := cfg.Database + "_reader"
	for _, q := range []string{
		`REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
		`CREATE ROLE ` + role + ` LOGIN`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), `DROP ROLE `+role); err != nil {
			t.Error(err)
		}
	})
	cfg.User = role
	reader, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close(ctx)
	st, err := migrations.GetStatus(ctx, reader)
	if err != nil {
		t.Fatalf("status of an empty database as a role that may only read: %v", err)
	}
	if st.Current != 0 || st.Latest != migrations.Latest() || len(st.Steps) != int(st.Latest) {
		t.Errorf("status %d of %d with %d steps, want 0 of %d with as many", st.Current, st.Latest, len(st.Steps), migrations.Latest())
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, migrations.VersionTable).Scan(&exists); err != nil || exists {
		t.Errorf("version table after a status: exists %v (%v), want none", exists, err)
	}

	// The steps are named as a migrated database's are.
	if err := migrations.Up(ctx, admin); err != nil {
		t.Fatal(err)
	}
	after, err := migrations.GetStatus(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for i := range after.Steps {
		after.Steps[i].Applied = false
	}
	if diff := cmp.Diff(after.Steps, st.Steps); diff != "" {
		t.Errorf("steps of an empty database (-as migrated, +got):\n%s", diff)
	}
}
