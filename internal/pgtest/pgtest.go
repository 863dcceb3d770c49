// Package pgtest gives each test a fresh PostgreSQL database with lhcnp's
// schema, on a real private cluster started from the installed binaries
// (internal/pgserver): one cluster per test binary, started on first use; a
// template database migrated once; then per test `CREATE DATABASE ...
// TEMPLATE`, dropped when the test ends. A package that uses it should call
// pgtest.Main (or pgtest.Close after m.Run) from TestMain so the cluster
// stops and its directory goes away;
// should the test binary die first, the server shuts itself down
// (pgserver's parent-death signal).
//
// NewCitus does the same on a Citus cluster (a coordinator and two workers,
// one per test binary): a template database is created on every node, the
// nodes registered in it and migrated through the coordinator, once; then
// per test each node copies its own node's template (Citus keeps shards and
// metadata per node and per database: the copies agree with each other as
// the templates do), where a migration through Citus costs seconds.
//
// Private and PrivateCitus start clusters of a test's own; they, and the
// shared Citus cluster's nodes, are copies of seed clusters made once per
// test binary (initdb's; with "lhcnp" migrated, Private's) rather than each
// an initdb.
//
// Without the server binaries (or Citus, for NewCitus) a test is skipped with a message saying how to
// install them, unless CI=true or LHCNP_ORACLES=required (the Makefile's
// default), when it fails.
//
// It depends on pgserver, migrations, pgx and testing; nothing depends on it
// outside tests.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/migrations"
)

// TemplateDB is the migrated database every test database is cloned from.
const TemplateDB = "lhcnp_template"

// cluster is the test binary's shared server. It is the package's one piece
// of mutable state, by design: tests of one binary share one cluster.
type cluster struct {
	once sync.Once
	srv  *pgserver.Server
	err  error
	seq  atomic.Int64
}

var shared cluster

// citusCluster is the test binary's shared Citus cluster (a coordinator and
// two workers), started on first use by Citus.
type citusCluster struct {
	once sync.Once
	c    *pgserver.Cluster
	err  error

	templateOnce sync.Once
	templateErr  error

	// drops are the tests' databases being dropped in the background
	// (dropLater), dropErrs what they failed with; Close waits for them.
	drops    sync.WaitGroup
	dropMu   sync.Mutex
	dropErrs []error
}

// dropLater drops database name on every node of c when t ends, in the
// background: on the coordinator a DROP DATABASE waits about 2 s for Citus
// (its maintenance daemon) whatever the database holds, which the next
// test need not wait for. Close waits for the drops and returns their
// errors (t has ended: it can no longer fail).
func dropLater(t testing.TB, c *pgserver.Cluster, name string) {
	t.Cleanup(func() {
		sharedCitus.drops.Add(1)
		go func() {
			defer sharedCitus.drops.Done()
			if err := c.DropDatabase(context.Background(), name); err != nil {
				sharedCitus.dropMu.Lock()
				sharedCitus.dropErrs = append(sharedCitus.dropErrs, fmt.Errorf("dropping %s: %w", name, err))
				sharedCitus.dropMu.Unlock()
			}
		}()
	})
}

// CitusTemplateDB is the migrated database on every node of the shared
// Citus cluster that NewCitus's databases are copied from.
const CitusTemplateDB = "lhcnp_citus_template"

var sharedCitus citusCluster

// CitusWorkers is the number of workers of the shared Citus cluster.
const CitusWorkers = 2

// seeds are stopped clusters, made once per test binary in one temporary
// directory, that private clusters and the Citus nodes start as copies of
// (pgserver.WithCopyOf) instead of running initdb, seconds each on two
// busy cores: empty is initdb's cluster, migrated has database "lhcnp"
// migrated (Private's).
type seeds struct {
	mu              sync.Mutex
	dir             string
	empty, migrated string
}

var seed seeds

// seedDir returns the seed cluster (migrated or empty), making it on first
// use.
func seedDir(ctx context.Context, migrated bool) (string, error) {
	seed.mu.Lock()
	defer seed.mu.Unlock()
	if seed.dir == "" {
		// pgserver's temporary prefix: RemoveStaleTemp takes it should
		// the test binary be killed. Its time is renewed at every use.
		dir, err := os.MkdirTemp("", "lhcnp-pg-seed-")
		if err != nil {
			return "", err
		}
		// The postgres user (a test run as root) reads the seeds.
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", err
		}
		seed.dir = dir
	}
	now := time.Now()
	_ = os.Chtimes(seed.dir, now, now)
	if seed.empty == "" {
		dir := filepath.Join(seed.dir, "empty")
		srv, err := pgserver.Start(ctx, pgserver.WithDataDir(dir), pgserver.WithoutDurability())
		if err != nil {
			return "", fmt.Errorf("seed cluster: %w", err)
		}
		if err := srv.Close(); err != nil {
			return "", fmt.Errorf("seed cluster: %w", err)
		}
		seed.empty = dir
	}
	if !migrated {
		return seed.empty, nil
	}
	if seed.migrated == "" {
		dir := filepath.Join(seed.dir, "migrated")
		srv, err := pgserver.Start(ctx, pgserver.WithDataDir(dir), pgserver.WithCopyOf(seed.empty), pgserver.WithoutDurability())
		if err != nil {
			return "", fmt.Errorf("seed cluster: %w", err)
		}
		err = migrateNew(ctx, srv, "lhcnp")
		if e := srv.Close(); err == nil {
			err = e
		}
		if err != nil {
			return "", fmt.Errorf("seed cluster: %w", err)
		}
		seed.migrated = dir
	}
	return seed.migrated, nil
}

// Main runs the tests (m.Run), stops the shared cluster and exits with the
// tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := Close(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping the cluster: %v\n", err)
	}
	os.Exit(code)
}

// Close stops the shared cluster, if one was started, and removes its
// directory: for a TestMain that does more than Main, after m.Run.
func Close() error {
	sharedCitus.drops.Wait()
	err := errors.Join(sharedCitus.dropErrs...)
	if sharedCitus.c != nil {
		if e := sharedCitus.c.Close(); e != nil {
			err = e
		}
	}
	if shared.srv != nil {
		if e := shared.srv.Close(); e != nil {
			err = e
		}
	}
	if seed.dir != "" {
		if e := os.RemoveAll(seed.dir); e != nil {
			err = e
		}
	}
	return err
}

// Require skips t when the PostgreSQL server binaries are missing, or fails
// it when CI=true or LHCNP_ORACLES=required.
func Require(t testing.TB) {
	t.Helper()
	if _, err := pgserver.FindBinaries(); err != nil {
		if required() {
			t.Fatalf("pgtest: %v (required: CI=true or LHCNP_ORACLES=required)", err)
		}
		t.Skipf("pgtest: skipping, no PostgreSQL: %v", err)
	}
}

func required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("LHCNP_ORACLES") == "required"
}

// Server returns the shared cluster, starting it and migrating the template
// on first use. Tests must not stop it (fault tests use Private).
func Server(t testing.TB) *pgserver.Server {
	t.Helper()
	Require(t)
	shared.once.Do(func() {
		ctx := context.Background()
		// Directories of test binaries killed before they could clean up.
		_, _ = pgserver.RemoveStaleTemp(time.Hour)
		srv, err := pgserver.Start(ctx, pgserver.WithoutDurability(),
			pgserver.WithSetting("max_connections", "300"))
		if err != nil {
			shared.err = err
			return
		}
		if err := migrateNew(ctx, srv, TemplateDB); err != nil {
			srv.Close()
			shared.err = err
			return
		}
		shared.srv = srv
	})
	if shared.err != nil {
		t.Fatalf("pgtest: shared cluster: %v", shared.err)
	}
	return shared.srv
}

// migrateNew creates database name on srv and applies every migration.
func migrateNew(ctx context.Context, srv *pgserver.Server, name string) error {
	if err := srv.CreateDatabase(ctx, name, ""); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, srv.DSN(name))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return migrations.Up(ctx, conn)
}

// New returns a pool on a fresh database with the full schema, and its DSN.
// The database is dropped when the test ends.
func New(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	srv := Server(t)
	ctx := context.Background()
	name := dbName(t.Name(), shared.seq.Add(1))
	if err := srv.CreateDatabase(ctx, name, TemplateDB); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Registered before Pool's: the pool is closed first, then the
	// database dropped.
	t.Cleanup(func() {
		if err := srv.DropDatabase(context.Background(), name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	dsn := srv.DSN(name)
	return Pool(t, dsn), dsn
}

// Pool returns a pool on dsn, closed when the test ends: for a database of
// Private's or PrivateCitus's, or one New gave, as another role or with
// its connections set up otherwise. Each configure, in turn, changes the
// pool's configuration (dsn's, parsed) before the pool is made: a tracer,
// a dialer, another host.
func Pool(t testing.TB, dsn string, configure ...func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	for _, c := range configure {
		c(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName makes a database name from a test name: readable in the server's
// log, unique by seq, within PostgreSQL's 63-byte limit.
func dbName(test string, seq int64) string {
	base := strings.Trim(notIdent.ReplaceAllString(strings.ToLower(test), "_"), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("t_%s_%d", base, seq)
}

// Private starts a cluster of the test's own, with database "lhcnp"
// migrated, for tests that stop, crash or slow down the server (the shared
// one must stay up for the other tests): a copy of a seed cluster migrated
// once per test binary. It is closed when the test ends.
func Private(t testing.TB, opts ...pgserver.Option) (*pgserver.Server, string) {
	t.Helper()
	Require(t)
	ctx := context.Background()
	from, err := seedDir(ctx, true)
	if err != nil {
		t.Fatalf("pgtest: private cluster: %v", err)
	}
	srv, err := pgserver.Start(ctx, append([]pgserver.Option{pgserver.WithoutDurability(), pgserver.WithCopyOf(from)}, opts...)...)
	if err != nil {
		t.Fatalf("pgtest: private cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return srv, srv.DSN("lhcnp")
}

// RequireCitus is Require for the Citus extension as well.
func RequireCitus(t testing.TB) {
	t.Helper()
	Require(t)
	if err := pgserver.FindCitus(); err != nil {
		if required() {
			t.Fatalf("pgtest: %v (required: CI=true or LHCNP_ORACLES=required)", err)
		}
		t.Skipf("pgtest: skipping, no Citus: %v", err)
	}
}

// Citus returns the shared Citus cluster, starting it on first use. Tests
// must not stop its nodes.
func Citus(t testing.TB) *pgserver.Cluster {
	t.Helper()
	RequireCitus(t)
	sharedCitus.once.Do(func() {
		_, _ = pgserver.RemoveStaleTemp(time.Hour)
		from, err := seedDir(context.Background(), false)
		if err != nil {
			sharedCitus.err = err
			return
		}
		// 8 shards instead of Citus's 32: every daily partition of samples
		// has as many, and two cores migrate them.
		sharedCitus.c, sharedCitus.err = pgserver.StartCluster(context.Background(), CitusWorkers,
			pgserver.WithoutDurability(), pgserver.WithCopyOf(from), pgserver.WithSetting("max_connections", "300"),
			pgserver.WithSetting("citus.shard_count", "8"),
			// Two-phase commits stay in pg_dist_transaction until a test
			// recovers them (recover_prepared_transactions), so that a
			// test can count them.
			pgserver.WithSetting("citus.recover_2pc_interval", "-1"))
	})
	if sharedCitus.err != nil {
		t.Fatalf("pgtest: shared Citus cluster: %v", sharedCitus.err)
	}
	return sharedCitus.c
}

// EmptyCitus creates a database on the shared Citus cluster (on every
// node, nodes registered) without lhcnp's schema and returns its DSN on the
// coordinator. It is dropped on every node after the test ends.
func EmptyCitus(t testing.TB) string {
	t.Helper()
	c := Citus(t)
	name := dbName(t.Name(), shared.seq.Add(1))
	dropLater(t, c, name)
	if err := c.CreateDatabase(context.Background(), name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return c.DSN(name)
}

// NewCitus returns a pool on a fresh distributed database with the full
// schema, on the coordinator of the shared Citus cluster, and its DSN: on
// every node a copy of that node's CitusTemplateDB. The database is dropped
// on every node after the test ends.
func NewCitus(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	c := Citus(t)
	sharedCitus.templateOnce.Do(func() { sharedCitus.templateErr = citusTemplate(context.Background(), c) })
	if sharedCitus.templateErr != nil {
		t.Fatalf("pgtest: Citus template: %v", sharedCitus.templateErr)
	}
	ctx := context.Background()
	name := dbName(t.Name(), shared.seq.Add(1))
	dropLater(t, c, name)
	// The nodes copy the template at once: a worker's copy (its shards'
	// files) takes most of a second, the coordinator's a tenth.
	var g errgroup.Group
	for _, s := range c.Nodes() {
		g.Go(func() error { return s.CreateDatabase(ctx, name, CitusTemplateDB) })
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	dsn := c.DSN(name)
	return Pool(t, dsn), dsn
}

// citusTemplate creates CitusTemplateDB on every node of c, registers the
// nodes in it and migrates it through the coordinator, then closes it to
// connections on every node: CREATE DATABASE copies a template only while
// nobody is connected to it, and Citus's maintenance daemon of a database
// stays connected (terminated, it cannot come back to a database that takes
// no connections).
func citusTemplate(ctx context.Context, c *pgserver.Cluster) error {
	if err := c.CreateDatabase(ctx, CitusTemplateDB); err != nil {
		return err
	}
	if err := migrateDSN(ctx, c.DSN(CitusTemplateDB)); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	for _, s := range c.Nodes() {
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{CitusTemplateDB}.Sanitize()+" ALLOW_CONNECTIONS false")
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", CitusTemplateDB)
		}
		conn.Close(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

// PrivateCitus starts a Citus cluster of the test's own (a coordinator and
// `workers` workers) without any database, for tests that stop its nodes or
// make their own databases (Cluster.CreateDatabase). It is closed when the
// test ends.
func PrivateCitus(t testing.TB, workers int, opts ...pgserver.Option) *pgserver.Cluster {
	t.Helper()
	RequireCitus(t)
	from, err := seedDir(context.Background(), false)
	if err != nil {
		t.Fatalf("pgtest: private Citus cluster: %v", err)
	}
	c, err := pgserver.StartCluster(context.Background(), workers,
		append([]pgserver.Option{pgserver.WithoutDurability(), pgserver.WithCopyOf(from), pgserver.WithSetting("citus.shard_count", "8")}, opts...)...)
	if err != nil {
		t.Fatalf("pgtest: private Citus cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// PrivateCitusDB is PrivateCitus with database "lhcnp" created on every
// node and migrated through the coordinator; it returns the cluster and
// the database's DSN on the coordinator.
func PrivateCitusDB(t testing.TB, workers int, opts ...pgserver.Option) (*pgserver.Cluster, string) {
	t.Helper()
	c := PrivateCitus(t, workers, opts...)
	ctx := context.Background()
	if err := c.CreateDatabase(ctx, "lhcnp"); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := migrateDSN(ctx, c.DSN("lhcnp")); err != nil {
		t.Fatalf("pgtest: migrating on Citus: %v", err)
	}
	return c, c.DSN("lhcnp")
}

// migrateDSN applies every migration to the database of dsn.
func migrateDSN(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return migrations.Up(ctx, conn)
}
