package migrations_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNotificationsBetweenSameAsView: notifications_between is "the rows of
// notifications_per_second" for a window, with "the same columns and
// rules" (docs/collector.md, "Windows"): the same column names in the same
// order, and over all time the same rows, speed and
// rate_per_simulated_second included (a switch at 0.05, one at real time).
// Before migration 21 the function lacked speed and
// rate_per_simulated_second (this test failed). On Citus,
// TestCitusViewsSameAsOneNode compares the function with one node's.
func TestNotificationsBetweenSameAsView(t *testing.T) {
	f := newFixture(t)
	speedRates(f)
	f.add(f.series("sim", engineSpeed, "", -1), 0, num("0.05"), flagSync)
	f.commit()

	type col struct{ Name string }
	view := query[col](t, f.pool, `SELECT attname AS name FROM pg_attribute
		WHERE attrelid = 'notifications_per_second'::regclass AND attnum > 0 ORDER BY attnum`)
	fn := query[col](t, f.pool, `SELECT unnest(proargnames[3:]) AS name FROM pg_proc WHERE proname = 'notifications_between'`)
	if diff := cmp.Diff(view, fn); diff != "" {
		t.Errorf("columns of notifications_between (-notifications_per_second +notifications_between):\n%s", diff)
	}

	const order = ` ORDER BY target, interface, queue, second, action`
	want, werr := rowsOf(t, f.pool, `SELECT * FROM notifications_per_second`+order)
	got, gerr := rowsOf(t, f.pool, `SELECT * FROM notifications_between($1, $2)`+order,
		f.t0.Add(-time.Hour), f.t0.Add(time.Hour))
	if werr != "" || gerr != "" {
		t.Fatalf("notifications_per_second: %s; notifications_between: %s", werr, gerr)
	}
	if len(want) == 0 {
		t.Fatal("notifications_per_second: no rows")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications_between over all time (-notifications_per_second +notifications_between):\n%s", diff)
	}
}
