package collector_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestReleaseOnlyWhatIsHeld: Release says whether it released the lease;
// a collector whose lease expired and was taken by another releases
// nothing (handOver then counts no handover of its own), and the holder's
// lease is untouched.
func TestReleaseOnlyWhatIsHeld(t *testing.T) {
	pool, _ := newDB(t)
	ctx := context.Background()
	a := lease.New(pool, "rel-a", "a:1", time.Minute)
	b := lease.New(pool, "rel-b", "b:1", time.Minute)
	for _, m := range []*lease.Manager{a, b} {
		if err := m.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := a.Acquire(ctx, "rel-sw"); err != nil || !ok {
		t.Fatalf("a acquires: %v %v", ok, err)
	}
	if released, err := b.Release(ctx, "rel-sw"); err != nil || released {
		t.Errorf("b releases a's lease: released %v (%v), want false", released, err)
	}
	if released, err := a.Release(ctx, "rel-sw"); err != nil || !released {
		t.Errorf("a releases its lease: released %v (%v), want true", released, err)
	}
	l, ok, err := b.Acquire(ctx, "rel-sw")
	if err != nil || !ok {
		t.Fatalf("b takes the released lease: %v %v", ok, err)
	}
	if released, err := a.Release(ctx, "rel-sw"); err != nil || released {
		t.Errorf("a releases the lease b took: released %v (%v), want false", released, err)
	}
	if got, err := b.Renew(ctx, "rel-sw", l.Epoch); err != nil || got != lease.Renewed {
		t.Errorf("b renews after a's release of nothing: %v (%v), want renewed", got, err)
	}
}

// TestLateRenewalAfterRelease: a renewal the server runs after the
// holder's release (the client ordered them, but the renewal's statement
// reached its row late: here it queues behind the release on a row lock
// the test holds) leaves the released lease alone, whether its client
// still waits for the answer (then the renewal finds the lease not held,
// and its fallback does not take a released lease back) or gave up
// waiting (pgx then sends a cancel request, from a new connection; here it
// is lost on the way, as across a flaky network: the statement still
// runs). The new owner takes the lease at once, not after leases.ttl.
func TestLateRenewalAfterRelease(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		giveUp bool // the renewal's client times out before its statement runs
	}{
		{"the client waits for the renewal", false},
		{"the client gave up on the renewal", true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			pool, dsn := newDB(t)
			ctx := context.Background()
			const sw = "late-sw"
			a := lease.New(poolDroppingCancels(t, dsn), "late-a", "a:1", time.Minute)
			b := lease.New(pool, "late-b", "b:1", time.Minute)
			la, ok, err := a.Acquire(ctx, sw)
			if err != nil || !ok {
				t.Fatalf("a acquires: %v %v", ok, err)
			}
			locker, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer locker.Close(ctx)
			tx, err := locker.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM leases WHERE target = $1 FOR UPDATE`, sw); err != nil {
				t.Fatal(err)
			}
			// The release first, then the renewal: both wait for the row,
			// in that order.
			type released struct {
				ok  bool
				err error
			}
			relDone := make(chan released, 1)
			go func() {
				ok, err := a.Release(ctx, sw)
				relDone <- released{ok, err}
			}()
			waitBlocked(t, pool, "WITH r AS (UPDATE leases%", 1)
			type renewal struct {
				res lease.Renewal
				err error
			}
			renDone := make(chan renewal, 1)
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				res, err := a.Renew(rctx, sw, la.Epoch)
				renDone <- renewal{res, err}
			}()
			waitBlocked(t, pool, "UPDATE leases SET expires_at = now()%", 1)
			if tt.giveUp {
				// The row is still locked: the client gives up first,
				// while its statement waits on the server.
				cancel()
				if r := <-renDone; r.err == nil {
					t.Fatalf("the renewal answered %v while the row was locked", r.res)
				}
				waitBlocked(t, pool, "UPDATE leases SET expires_at = now()%", 1)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if r := <-relDone; r.err != nil || !r.ok {
				t.Fatalf("a releases: released %v (%v), want true", r.ok, r.err)
			}
			if tt.giveUp {
				waitBlocked(t, pool, "UPDATE leases SET expires_at = now()%", 0)
			} else if r := <-renDone; r.err != nil || r.res != lease.Lost {
				t.Errorf("a's renewal after its release: %v (%v), want lost", r.res, r.err)
			}
			lb, ok, err := b.Acquire(ctx, sw)
			if err != nil || !ok {
				t.Fatalf("b cannot take the lease a released (a late renewal took it back): %v %v", ok, err)
			}
			if want := (lease.Lease{Epoch: la.Epoch + 1, From: "late-a"}); lb != want {
				t.Errorf("b took %+v, want %+v", lb, want)
			}
		})
	}
}

// waitBlocked waits until n statements starting with like (a LIKE
// pattern) are running and waiting for a lock (n 0: none is running).
func waitBlocked(t testing.TB, pool *pgxpool.Pool, like string, n int64) {
	t.Helper()
	const q = `SELECT count(*) FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND state = 'active' AND query LIKE $1 AND ($2 = 0 OR wait_event_type = 'Lock')`
	waitFor(t, 10*time.Second, fmt.Sprintf("%d statements %q waiting for a lock", n, like), func() (bool, string) {
		got := count(t, pool, q, like, n)
		return got == n, fmt.Sprintf("%d", got)
	})
}

// TestRenew: a renewal extends a lease still held; takes again, at the
// same epoch, one that expired with nobody taking it (the database was
// away longer than the TTL); and loses one another collector took, or
// that its holder released.
func TestRenew(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		setup func(ctx context.Context, pool *pgxpool.Pool, a, b *lease.Manager) error
		want  lease.Renewal
	}{
		{"held", nil, lease.Renewed},
		{"expired, nobody took it", func(ctx context.Context, pool *pgxpool.Pool, a, b *lease.Manager) error {
			return expire(ctx, pool)
		}, lease.Reacquired},
		{"expired and taken", func(ctx context.Context, pool *pgxpool.Pool, a, b *lease.Manager) error {
			if err := expire(ctx, pool); err != nil {
				return err
			}
			_, _, err := b.Acquire(ctx, "renew-sw")
			return err
		}, lease.Lost},
		{"taken, then expired too", func(ctx context.Context, pool *pgxpool.Pool, a, b *lease.Manager) error {
			if err := expire(ctx, pool); err != nil {
				return err
			}
			if _, _, err := b.Acquire(ctx, "renew-sw"); err != nil {
				return err
			}
			return expire(ctx, pool)
		}, lease.Lost},
		{"released", func(ctx context.Context, pool *pgxpool.Pool, a, b *lease.Manager) error {
			_, err := a.Release(ctx, "renew-sw")
			return err
		}, lease.Lost},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			pool, _ := newDB(t)
			ctx := context.Background()
			a := lease.New(pool, "renew-a", "a:1", time.Minute)
			b := lease.New(pool, "renew-b", "b:1", time.Minute)
			l, ok, err := a.Acquire(ctx, "renew-sw")
			if err != nil || !ok {
				t.Fatalf("a acquires: %v %v", ok, err)
			}
			if tt.setup != nil {
				if err := tt.setup(ctx, pool, a, b); err != nil {
					t.Fatal(err)
				}
			}
			got, err := a.Renew(ctx, "renew-sw", l.Epoch)
			if err != nil || got != tt.want {
				t.Fatalf("Renew = %v (%v), want %v", got, err, tt.want)
			}
			held := count(t, pool, `SELECT count(*) FROM leases WHERE target = 'renew-sw' AND owner = 'renew-a'
				AND epoch = $1 AND expires_at > now() + interval '50 seconds'`, l.Epoch)
			if want := map[bool]int64{true: 1, false: 0}[tt.want != lease.Lost]; held != want {
				t.Errorf("a holds the lease at epoch %d for a minute: %d rows, want %d", l.Epoch, held, want)
			}
		})
	}
}

// expire makes every lease lapse, as a database outage longer than the
// TTL does.
func expire(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 second'`)
	return err
}

// acquireCases are Acquire's cases: what the lease row of the target ($1)
// is first, and what Acquire by from-a takes.
var acquireCases = []struct {
	desc   string
	setup  string // SQL run first, $1 the target
	want   lease.Lease
	wantOK bool
}{
	{"new", ``, lease.Lease{Epoch: 1}, true},
	{"ours from before a restart", `INSERT INTO leases VALUES ($1, 'from-a', 4, now() + interval '1 minute')`, lease.Lease{Epoch: 4}, true},
	{"ours, expired", `INSERT INTO leases VALUES ($1, 'from-a', 4, now() - interval '1 minute')`, lease.Lease{Epoch: 4}, true},
	{"another's, expired", `INSERT INTO leases VALUES ($1, 'dead', 4, now() - interval '1 minute')`, lease.Lease{Epoch: 5, From: "dead"}, true},
	{"another's, released", `INSERT INTO leases VALUES ($1, 'gone', 4, '-infinity')`, lease.Lease{Epoch: 5, From: "gone"}, true},
	{"another's, held", `INSERT INTO leases VALUES ($1, 'alive', 4, now() + interval '1 minute')`, lease.Lease{}, false},
}

// acquireCase runs acquireCases[i] on target of pool.
func acquireCase(t *testing.T, pool *pgxpool.Pool, i int, target string) {
	t.Helper()
	ctx := context.Background()
	tt := acquireCases[i]
	if tt.setup != "" {
		if _, err := pool.Exec(ctx, tt.setup, target); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := lease.New(pool, "from-a", "a:1", time.Minute).Acquire(ctx, target)
	if err != nil || ok != tt.wantOK {
		t.Fatalf("Acquire: ok %v (%v), want %v", ok, err, tt.wantOK)
	}
	if d := cmp.Diff(tt.want, got); d != "" {
		t.Errorf("Acquire (-want +got):\n%s", d)
	}
}

// TestAcquireSaysFrom: Acquire says which collector a lease was taken
// from: nobody for a new lease or one already ours (from before a
// restart), the previous owner for an expired or released one.
func TestAcquireSaysFrom(t *testing.T) {
	for i, tt := range acquireCases {
		t.Run(tt.desc, func(t *testing.T) {
			pool, _ := newDB(t)
			acquireCase(t, pool, i, "from-sw")
		})
	}
}

// TestLeasesCitus: on Citus, where leases and collectors are reference
// tables (schema 11), a collector joins (Heartbeat, Members), takes leases
// as on one node (acquireCases, a target each in one database), renews,
// releases and leaves. Citus refuses a function that is not IMMUTABLE in
// an ON CONFLICT clause of those tables: Heartbeat and Acquire failed
// there with now() in theirs.
func TestLeasesCitus(t *testing.T) {
	pool, _ := pgtest.NewCitus(t)
	ctx := context.Background()
	a := lease.New(pool, "from-a", "a:1", time.Minute)
	for range 2 { // joins, then heartbeats
		if err := a.Heartbeat(ctx); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	}
	if got, err := a.Members(ctx); err != nil || !cmp.Equal(got, []string{"from-a"}) {
		t.Errorf("members %v (%v), want [from-a]", got, err)
	}
	for i, tt := range acquireCases {
		t.Run(tt.desc, func(t *testing.T) { acquireCase(t, pool, i, fmt.Sprintf("from-sw%d", i)) })
	}
	if got, err := a.Renew(ctx, "from-sw0", 1); err != nil || got != lease.Renewed {
		t.Errorf("renew: %v (%v), want renewed", got, err)
	}
	if released, err := a.Release(ctx, "from-sw0"); err != nil || !released {
		t.Errorf("release: %v (%v), want true", released, err)
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
}

// poolDroppingCancels is a pool on dsn whose connections go through a
// proxy that forwards them but drops PostgreSQL cancel requests (a new
// connection whose first message is CancelRequest): a statement whose
// client gave up runs to its end.
func poolDroppingCancels(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	return pgtest.Pool(t, dsn, func(cfg *pgxpool.Config) {
		server := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				go forwardUnlessCancel(c, server)
			}
		}()
		cfg.ConnConfig.Host = "127.0.0.1"
		cfg.ConnConfig.Port = uint16(lis.Addr().(*net.TCPAddr).Port)
		cfg.ConnConfig.Fallbacks = nil
	})
}

// cancelRequestCode is the protocol's CancelRequest code (after the
// message's length, 16).
const cancelRequestCode = 80877102

func forwardUnlessCancel(c net.Conn, server string) {
	defer c.Close()
	var first [8]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return
	}
	if binary.BigEndian.Uint32(first[4:]) == cancelRequestCode {
		return
	}
	s, err := net.Dial("tcp", server)
	if err != nil {
		return
	}
	defer s.Close()
	if _, err := s.Write(first[:]); err != nil {
		return
	}
	go func() {
		io.Copy(s, c)
		s.Close()
	}()
	io.Copy(c, s)
}
