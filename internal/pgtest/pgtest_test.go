package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/migrations"
)

func TestMain(m *testing.M) { Main(m) }

// TestIsolated: two tests' databases are separate copies of the template.
func TestIsolated(t *testing.T) {
	ctx := context.Background()
	var names [2]string
	for i := range names {
		pool, _ := New(t)
		if _, err := pool.Exec(ctx, `INSERT INTO targets (name, address) VALUES ('sw1', '127.0.0.1:9339')`); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM targets`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("database %d: %d targets, want 1 (databases not isolated)", i, n)
		}
		if err := pool.QueryRow(ctx, `SELECT current_database()`).Scan(&names[i]); err != nil {
			t.Fatal(err)
		}
	}
	if names[0] == names[1] {
		t.Errorf("both tests got database %s", names[0])
	}
}

// TestPool: Pool's pool is on dsn's database with each configure applied,
// in order, and closed when its test ends; a DSN that does not parse fails
// the test, naming pgtest.
func TestPool(t *testing.T) {
	ctx := context.Background()
	_, dsn := New(t)
	var pool *pgxpool.Pool
	t.Run("open", func(t *testing.T) {
		pool = Pool(t, dsn,
			func(cfg *pgxpool.Config) { cfg.ConnConfig.RuntimeParams["application_name"] = "first" },
			func(cfg *pgxpool.Config) { cfg.ConnConfig.RuntimeParams["application_name"] += ", then second" })
		var db, app string
		if err := pool.QueryRow(ctx, `SELECT current_database(), current_setting('application_name')`).Scan(&db, &app); err != nil {
			t.Fatal(err)
		}
		if want := dsnDatabase(t, dsn); db != want {
			t.Errorf("pool on database %s, want %s", db, want)
		}
		if want := "first, then second"; app != want {
			t.Errorf("application_name %q, want %q (each configure, in turn)", app, want)
		}
	})
	if err := pool.Ping(ctx); err == nil {
		t.Error("the pool answers a ping after its test ended, want it closed")
	}
	var bad fatalTB
	func() {
		defer func() { _ = recover() }()
		Pool(&bad, "postgres://:notaport/x")
	}()
	if !strings.HasPrefix(bad.fatal, "pgtest: ") {
		t.Errorf("Pool on a bad DSN: Fatalf(%q), want an error beginning pgtest: ", bad.fatal)
	}
}

// dsnDatabase is dsn's database.
func dsnDatabase(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.ConnConfig.Database
}

// fatalTB is a testing.TB whose Fatalf keeps its message and stops the
// caller (a panic the caller recovers).
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(f)
}

func TestDBName(t *testing.T) {
	for _, tt := range []struct{ desc, test, want string }{
		{"plain", "TestX", "t_testx_7"},
		{"subtest", "TestX/a b-c", "t_testx_a_b_c_7"},
		{"long", "TestAVeryLongNameThatGoesOnAndOnPastFortyCharacters", "t_testaverylongnamethatgoesonandonpastfort_7"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := dbName(tt.test, 7); got != tt.want {
				t.Errorf("dbName(%q) = %q, want %q", tt.test, got, tt.want)
			}
		})
	}
}

// TestNewCitus: a database of the Citus cluster has the full schema,
// every worker registered in it and samples distributed; two tests'
// databases, copies of the same templates, hold their own shards.
func TestNewCitus(t *testing.T) {
	ctx := context.Background()
	pool, _ := NewCitus(t)
	var version, workers int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM lhcnp_schema_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if want := int(migrations.Latest()); version != want {
		t.Errorf("schema version %d, want %d", version, want)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM citus_get_active_worker_nodes()`).Scan(&workers); err != nil {
		t.Fatal(err)
	}
	if workers != CitusWorkers {
		t.Errorf("%d active workers, want %d", workers, CitusWorkers)
	}
	var distributed bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM citus_tables WHERE table_name = 'samples'::regclass)`).Scan(&distributed); err != nil {
		t.Fatal(err)
	}
	if !distributed {
		t.Error("samples is not distributed")
	}
	other, _ := NewCitus(t)
	for i, p := range []*pgxpool.Pool{pool, other} {
		if _, err := p.Exec(ctx, `INSERT INTO targets (name, address) VALUES ($1, '127.0.0.1:9339')`, fmt.Sprint("sw", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Exec(ctx, `CREATE TABLE iso (k int); SELECT create_distributed_table('iso', 'k')`); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Exec(ctx, `INSERT INTO iso SELECT generate_series(1, $1)`, 10*(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range []*pgxpool.Pool{pool, other} {
		var targets, rows int
		if err := p.QueryRow(ctx, `SELECT (SELECT count(*) FROM targets), (SELECT count(*) FROM iso)`).Scan(&targets, &rows); err != nil {
			t.Fatal(err)
		}
		if targets != 1 || rows != 10*(i+1) {
			t.Errorf("database %d: %d targets and %d rows, want 1 and %d (databases not isolated)", i, targets, rows, 10*(i+1))
		}
	}
}
