package collector_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// newDB is a fresh migrated database on the test binary's shared cluster.
func newDB(t testing.TB) (*pgxpool.Pool, string) { return pgtest.New(t) }

func stopDB() { pgtest.Close() }

// newPrivateDB is a cluster of the test's own, for tests that stop it.
func newPrivateDB(t testing.TB) (*pgserver.Server, *pgxpool.Pool, string) {
	srv, dsn := pgtest.Private(t)
	return srv, pgtest.Pool(t, dsn), dsn
}

func stopServer(t testing.TB, srv *pgserver.Server) {
	t.Helper()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
}

// restartServer starts a stopped cluster again (same port) and returns a
// new pool on its lhcnp database.
func restartServer(t testing.TB, srv *pgserver.Server) *pgxpool.Pool {
	t.Helper()
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return pgtest.Pool(t, srv.DSN("lhcnp"))
}
