package collector_test

import (
	"context"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/collector/lease"
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
	epoch, ok, err := b.Acquire(ctx, "rel-sw")
	if err != nil || !ok {
		t.Fatalf("b takes the released lease: %v %v", ok, err)
	}
	if released, err := a.Release(ctx, "rel-sw"); err != nil || released {
		t.Errorf("a releases the lease b took: released %v (%v), want false", released, err)
	}
	if ok, err := b.Renew(ctx, "rel-sw", epoch); err != nil || !ok {
		t.Errorf("b renews after a's release of nothing: %v %v", ok, err)
	}
}
