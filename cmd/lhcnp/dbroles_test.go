package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"

	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// roleRecipe is docs/collector.md's "Roles" section's psql blocks, in
// order: the superuser's roles and database, the superuser's pg_partman,
// the owner's grants.
func roleRecipe(t *testing.T) (roles, partman, grants string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/collector.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Roles\n")
	if !ok {
		t.Fatal(`docs/collector.md: no "### Roles" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n### ")
	var blocks []string
	for rest := sec; ; {
		var block string
		if _, rest, ok = strings.Cut(rest, "```psql\n"); !ok {
			break
		}
		block, rest, _ = strings.Cut(rest, "```")
		blocks = append(blocks, block)
	}
	if len(blocks) != 3 {
		t.Fatalf(`docs/collector.md "Roles": %d psql blocks, want 3 (roles, pg_partman, grants)`, len(blocks))
	}
	return blocks[0], blocks[1], blocks[2]
}

// psql runs script with the server's psql on dsn, stopping at the first
// error.
func psql(t *testing.T, dsn, script string) {
	t.Helper()
	bin, err := pgserver.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--dbname", dsn)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql %s: %v:\n%s\nscript:\n%s", dsn, err, out, script)
	}
}

// as is dsn (the superuser's, of pgserver) for role.
func as(dsn, role string) string {
	return strings.Replace(dsn, "postgres://"+pgserver.Superuser+"@", "postgres://"+role+"@", 1)
}

// TestDBRoles: docs/collector.md's role recipe, run as written (psql), on
// one PostgreSQL with each partition manager and on Citus: the owner
// migrates; a collector as lhcnp_collector (db.migrate false) runs a
// maintenance pass that must make two new days, without a warning, sets
// its retention and stores a switch's rows; lhcnp_reader reads the views,
// the *_between functions, History and targets without its password, and
// is refused the password, SELECT *, writes and the retention. Before
// migration 28 the collector's pass failed with "permission denied for
// schema public".
func TestDBRoles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc, manager string
		citus         bool
	}{
		{desc: "pg_partman", manager: "pg_partman"},
		{desc: "lhcnp", manager: "lhcnp"},
		{desc: "citus", manager: "lhcnp", citus: true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			roles, partman, grants := roleRecipe(t)
			var dsn string // the superuser's, of database lhcnp (the coordinator's)
			if tt.citus {
				c := pgtest.PrivateCitus(t, 1)
				for _, s := range c.Nodes() {
					psql(t, s.DSN("postgres"), roles)
				}
				if err := c.EnsureDatabase(ctx, "lhcnp"); err != nil {
					t.Fatal(err)
				}
				dsn = c.DSN("lhcnp")
			} else {
				srv, _ := pgtest.Private(t)
				// The private cluster's own "lhcnp" (migrated by the
				// superuser) makes way for the recipe's.
				if err := srv.DropDatabase(ctx, "lhcnp"); err != nil {
					t.Fatal(err)
				}
				psql(t, srv.DSN("postgres"), roles)
				if tt.manager == "pg_partman" {
					psql(t, srv.DSN("postgres"), partman)
				}
				dsn = srv.DSN("lhcnp")
			}
			var out, errOut bytes.Buffer
			if code := run([]string{"migrate", "up", "--db.dsn", as(dsn, "lhcnp_owner")}, &out, &errOut); code != 0 {
				t.Fatalf("lhcnp migrate up as lhcnp_owner: exit %d\n%s%s", code, out.String(), errOut.String())
			}
			psql(t, as(dsn, "lhcnp_owner"), grants)
			// The reader may ask where the schema stands.
			out.Reset()
			errOut.Reset()
			if code := run([]string{"migrate", "status", "--db.dsn", as(dsn, "lhcnp_reader")}, &out, &errOut); code != 0 {
				t.Fatalf("lhcnp migrate status as lhcnp_reader: exit %d\n%s%s", code, out.String(), errOut.String())
			}
			wantMode := "mode: PostgreSQL, one node"
			if tt.citus {
				wantMode = "mode: Citus coordinator with 1 workers"
			}
			latest := fmt.Sprintf("schema version %d of %d\n", migrations.Latest(), migrations.Latest())
			if !strings.Contains(out.String(), wantMode) || !strings.HasPrefix(out.String(), latest) {
				t.Errorf("lhcnp migrate status as lhcnp_reader, want %q and nothing pending:\n%s", wantMode, out.String())
			}
			owner := pgtest.Pool(t, as(dsn, "lhcnp_owner"))
			var manager string
			if err := owner.QueryRow(ctx, `SELECT manager FROM lhcnp_partitioning`).Scan(&manager); err != nil {
				t.Fatal(err)
			}
			if manager != tt.manager {
				t.Fatalf("partition manager %s, want %s", manager, tt.manager)
			}
			if _, err := owner.Exec(ctx, `INSERT INTO targets (name, address, username, password) VALUES ('nms1', '192.0.2.1:9339', 'admin', 's3cret')`); err != nil {
				t.Fatal(err)
			}
			// The next pass must make two days more than the migration's
			// pass made.
			if _, err := owner.Exec(ctx, `UPDATE lhcnp_partitioning SET premake_days = premake_days + 2, last_maintained = NULL`); err != nil {
				t.Fatal(err)
			}
			var premake int
			if err := owner.QueryRow(ctx, `SELECT premake_days FROM lhcnp_partitioning`).Scan(&premake); err != nil {
				t.Fatal(err)
			}
			// The day premake_days ahead: made by this pass (pg_partman
			// makes one day more at some hours, docs/collector.md: the
			// migration's pass made at most the day before it).
			newest := time.Now().UTC().AddDate(0, 0, premake).Format("2006_01_02")
			partition := func() bool {
				var ok bool
				if err := owner.QueryRow(ctx, `SELECT to_regclass('samples_p' || $1) IS NOT NULL OR to_regclass('samples_p' || replace($1, '_', '')) IS NOT NULL`, newest).Scan(&ok); err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if partition() {
				t.Fatalf("samples_p%s exists before the collector's pass", newest)
			}

			sw := startSwitch(t)
			file := collectorFile(t, fmt.Sprintf(`
db: {dsn: '%s', migrate: false, targets_table: false, retention: 72h}
state_dir: %s
writer: {batch_interval: 50ms}
targets:
  - {name: n1, address: %s, insecure: true, subscriptions: [{paths: [/lhcnp], mode: on_change}]}
`, as(dsn, "lhcnp_collector"), t.TempDir(), sw.addr))
			cctx, cancel := context.WithCancel(ctx)
			logs := &lockedBuffer{}
			done := make(chan error, 1)
			go func() { done <- runCollector(cctx, []string{"--config", file}, io.Discard, logs) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("collector: %v", err)
				}
			}()
			for deadline := time.Now().Add(90 * time.Second); ; {
				if strings.Contains(logs.String(), "partition maintenance") {
					t.Fatalf("the collector's pass as lhcnp_collector failed:\n%s", logs.String())
				}
				var maintained bool
				var stored int
				if err := owner.QueryRow(ctx, `SELECT (SELECT last_maintained IS NOT NULL FROM lhcnp_partitioning),
					(SELECT count(*) FROM samples x JOIN series s ON s.id = x.series_id WHERE s.target = 'n1')`).Scan(&maintained, &stored); err != nil {
					t.Fatal(err)
				}
				if maintained && stored > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 90 s: pass run %v, n1's samples %d; collector log:\n%s", maintained, stored, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !partition() {
				t.Errorf("the collector's pass did not make samples_p%s", newest)
			}
			var retention string
			if err := owner.QueryRow(ctx, `SELECT retention::text FROM lhcnp_partitioning`).Scan(&retention); err != nil {
				t.Fatal(err)
			}
			if retention != "3 days" {
				t.Errorf("retention after the collector's pass %s, want 3 days (its db.retention)", retention)
			}

			reader := pgtest.Pool(t, as(dsn, "lhcnp_reader"))
			for _, q := range []string{
				`SELECT count(*) FROM series_values WHERE target = 'n1'`,
				`SELECT count(*) FROM queue_latest`,
				`SELECT count(*) FROM queue_congestion`,
				`SELECT count(*) FROM queue_utilisation`,
				`SELECT count(*) FROM counter_increases`,
				`SELECT count(*) FROM drops_and_pauses`,
				`SELECT count(*) FROM notifications_per_second`,
				`SELECT count(*) FROM queue_congestion_between(now() - interval '1 hour', now())`,
				`SELECT count(*) FROM notifications_between(now() - interval '1 hour', now())`,
				`SELECT count(*) FROM queue_utilisation_between(now() - interval '1 hour', now())`,
				`SELECT count(*) FROM tuner_actions`,
				`SELECT count(*) FROM targets WHERE username = 'admin' AND address <> ''`,
			} {
				var n int
				if err := reader.QueryRow(ctx, q).Scan(&n); err != nil {
					t.Errorf("as lhcnp_reader, %s: %v", q, err)
				} else if strings.Contains(q, "series_values") && n == 0 {
					t.Errorf("as lhcnp_reader, %s: no rows", q)
				}
			}
			for _, q := range []string{
				`SELECT password FROM targets`,
				`SELECT * FROM targets`,
				`INSERT INTO targets (name, address) VALUES ('x', 'y')`,
				`SELECT lhcnp_set_retention('1 second')`,
				`SELECT lhcnp_maintain()`,
			} {
				if _, err := reader.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "permission denied") {
					t.Errorf("as lhcnp_reader, %s: %v, want permission denied", q, err)
				}
			}

			// History, reading with the reader's pool: a snapshot of n1 at
			// its newest stored sample.
			var at time.Time
			if err := reader.QueryRow(ctx, `SELECT max(x.ts) FROM samples x JOIN series s ON s.id = x.series_id WHERE s.target = 'n1'`).Scan(&at); err != nil {
				t.Fatal(err)
			}
			notes := historySnapshot(t, reader, "n1", at)
			if len(notes) == 0 {
				t.Errorf("History as lhcnp_reader: no notifications for n1 at %v", at)
			}
		})
	}
}

// historySnapshot asks a northbound that reads pool for target's tree at
// at (a History snapshot) and returns the notifications before the
// sync_response.
func historySnapshot(t *testing.T, pool *pgxpool.Pool, target string, at time.Time) []*gnmi.Notification {
	t.Helper()
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	nb := northbound.New(sch, northbound.WithHistory(pool))
	srv, err := service.New(service.WithInsecure(), service.WithSubscribe(nb))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc, err := servicetest.Client(t, srv).Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Send(&gnmi.SubscribeRequest{
		Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Mode: gnmi.SubscriptionList_ONCE, Prefix: &gnmi.Path{Target: target}, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}}}}}}},
		Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{
			Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: at.UnixNano()}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	var out []*gnmi.Notification
	for {
		r, err := sc.Recv()
		if err != nil {
			t.Fatalf("History snapshot: %v", err)
		}
		if r.GetSyncResponse() {
			return out
		}
		out = append(out, r.GetUpdate())
	}
}
