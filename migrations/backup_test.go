package migrations_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// pgTool runs one of the server's client programs (pg_dump, pg_restore).
func pgTool(t *testing.T, name string, args ...string) {
	t.Helper()
	bin, err := pgserver.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// backupWorkload stores a queue's depth every 6 hours over the fixture's
// five days, an event and a target with a password, and runs a pass with a
// 3-day retention (a day dropped, values carried, a horizon recorded).
func backupWorkload(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	depth := f.series("sim", queueState+"queue-depth", "wan", 0)
	for k := range 20 {
		f.add(depth, time.Duration(k)*6*time.Hour+30*time.Minute, 100*k, 0)
	}
	f.commit()
	if _, err := f.pool.Exec(ctx, `INSERT INTO events (ts, target, kind, interface, queue, action, batch_id) VALUES (now(), 'sim', 'cnp', 'wan', 0, 'sent', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `INSERT INTO targets (name, address, username, password) VALUES ('sim', '127.0.0.1:9339', 'admin', 's3cret')`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.SetRetention(ctx, f.pool, 3*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Maintain(ctx, f.pool); err != nil {
		t.Fatal(err)
	}
}

// contents is every row of lhcnp's tables (and pg_partman's part_config
// row of samples, if there is one), as text, by table: what a backup must
// give back.
func contents(t *testing.T, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	ctx := context.Background()
	tables := []string{"lhcnp_schema_version", "targets", "series", "samples", "latest", "events", "ingest_ledger",
		"stale_deletes", "dead_letters", "leases", "collectors", "tuner_actions", "lhcnp_partitioning", "lhcnp_carried_leaves"}
	var partman bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_partman')`).Scan(&partman); err != nil {
		t.Fatal(err)
	}
	if partman {
		tables = append(tables, "partman.part_config")
	}
	got := map[string][]string{}
	for _, tb := range tables {
		rows, err := pool.Query(ctx, `SELECT t::text FROM `+tb+` t ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		got[tb], err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := pool.Query(ctx, `SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'samples'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if got["partitions of samples"], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(got["samples"]) == 0 || len(got["events"]) == 0 || len(got["targets"]) == 0 {
		t.Fatalf("nothing to back up: %d samples, %d events, %d targets", len(got["samples"]), len(got["events"]), len(got["targets"]))
	}
	return got
}

// TestBackupRestore: docs/collector.md's backup of one PostgreSQL, with
// each partition manager: a pg_dump of the whole database (custom format)
// restored with pg_restore into an empty database gives every table's rows
// (the partitions and pg_partman's configuration too); the schema is at the
// latest version, migrations.Up has nothing to apply and a maintenance
// pass runs on it.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	for _, manager := range managers {
		t.Run(manager, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := retentionFixture(t, manager)
			backupWorkload(t, f)
			want := contents(t, f.pool)
			file := filepath.Join(t.TempDir(), "lhcnp.dump")
			pgTool(t, "pg_dump", "--format=custom", "--file="+file, f.pool.Config().ConnString())

			dsn := emptyDB(t)
			pgTool(t, "pg_restore", "--exit-on-error", "--dbname="+dsn, file)
			pool, err := pgxpool.New(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if d := cmp.Diff(want, contents(t, pool)); d != "" {
				t.Errorf("restored (-dumped +restored):\n%s", d)
			}
			conn := connect(t, dsn)
			st, err := migrations.GetStatus(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if st.Current != migrations.Latest() || st.Pending() {
				t.Errorf("restored database at version %d of %d", st.Current, st.Latest)
			}
			var applied []string
			if err := migrations.Up(ctx, conn, migrations.WithProgress(func(_ int32, name, _ string) { applied = append(applied, name) })); err != nil {
				t.Fatalf("migrate up on the restored database: %v", err)
			}
			if len(applied) != 0 {
				t.Errorf("migrate up on the restored database applied %q, want nothing", applied)
			}
			if err := migrations.Maintain(ctx, pool); err != nil {
				t.Errorf("maintenance on the restored database: %v", err)
			}
		})
	}
}

// TestBackupCitus: what docs/collector.md says of backups on Citus. A
// pg_dump of the coordinator restored into a fresh Citus database gives
// the rows in tables that are not distributed (Mode: citus installed,
// tables not distributed; migration 011 does not run again). A copy of
// every node's data directory, taken with every node stopped, put back
// after the rows were deleted and started again on the same ports, is the
// distributed database with every row.
func TestBackupCitus(t *testing.T) {
	t.Parallel()
	t.Run("pg_dump of the coordinator", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		pool, dsn := pgtest.NewCitus(t)
		f := dailyFixture(t, pool)
		backupWorkload(t, f)
		want := contents(t, pool)
		file := filepath.Join(t.TempDir(), "lhcnp.dump")
		pgTool(t, "pg_dump", "--format=custom", "--file="+file, dsn)

		restored := pgtest.EmptyCitus(t)
		pgTool(t, "pg_restore", "--exit-on-error", "--dbname="+restored, file)
		rpool, err := pgxpool.New(ctx, restored)
		if err != nil {
			t.Fatal(err)
		}
		defer rpool.Close()
		if d := cmp.Diff(want, contents(t, rpool)); d != "" {
			t.Errorf("restored (-dumped +restored):\n%s", d)
		}
		conn := connect(t, restored)
		mode, err := migrations.GetMode(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(migrations.Mode{CitusInstalled: true, Workers: pgtest.CitusWorkers}, mode); d != "" {
			t.Errorf("mode of the restored coordinator's dump (-want +got):\n%s", d)
		}
		if got, want := mode.String(), "tables not distributed"; !strings.Contains(got, want) {
			t.Errorf("mode %q, want it to say %q", got, want)
		}
	})
	t.Run("every node's data directory, stopped", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		c, dsn := pgtest.PrivateCitusDB(t, 1)
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		f := dailyFixture(t, pool)
		backupWorkload(t, f)
		want := contents(t, pool)
		pool.Close()

		nodes := c.Nodes()
		backup := t.TempDir()
		copyAll := func(from func(i int) string, to func(i int) string) {
			t.Helper()
			for i, s := range nodes {
				if err := s.Stop(); err != nil {
					t.Fatal(err)
				}
				if err := exec.Command("rm", "-rf", to(i)).Run(); err != nil {
					t.Fatal(err)
				}
				// -a: the postgres user's files stay its own.
				if out, err := exec.Command("cp", "-a", from(i), to(i)).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v\n%s", err, out)
				}
			}
			for _, s := range nodes {
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		data := func(i int) string { return nodes[i].DataDir() }
		saved := func(i int) string { return filepath.Join(backup, strings.Repeat("n", i+1)) }
		copyAll(data, saved) // the backup

		pool, err = pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `DELETE FROM samples; DELETE FROM events`); err != nil {
			t.Fatal(err)
		}
		pool.Close()
		copyAll(saved, data) // the restore

		pool, err = pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if d := cmp.Diff(want, contents(t, pool)); d != "" {
			t.Errorf("restored (-backed up +restored):\n%s", d)
		}
		conn := connect(t, dsn)
		mode, err := migrations.GetMode(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		if !mode.Citus || mode.Workers != 1 {
			t.Errorf("mode of the restored cluster: %s, want distributed over 1 worker", mode)
		}
		if err := migrations.Maintain(ctx, pool); err != nil {
			t.Errorf("maintenance on the restored cluster: %v", err)
		}
	})
}
