package writer_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestSampleSourceStoresEveryKind: the writer's COPY source, which refills
// one set of values for every row, stores every kind of value in its column
// with NULL in the others (kinds alternate, so a value left over from the
// previous row would show), and timestamps before 2000 and the Unix epoch,
// as pgx's CopyFrom stores the same values given one plain []any per row:
// the samples' text forms, read back from both tables, are equal.
func TestSampleSourceStoresEveryKind(t *testing.T) {
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	id := rows.SeriesID("sw1", "/x")
	b := &rows.Batch{ID: rows.NewBatchID(), Collector: "c", Target: "sw1",
		Series: []rows.Series{{ID: id, Target: "sw1", Path: "/x", FirstSeen: 1}}}
	for i, s := range []rows.Sample{
		{TS: 1_700_000_000_123_456_789, Kind: rows.ValInt, Int: -42},
		{TS: 1_700_000_000_123_457_999, Kind: rows.ValInt, Int: math.MaxInt64, Flags: rows.Reset},
		{TS: 1_700_000_001_000_000_000, Kind: rows.ValFloat, Float: 0.1},
		{TS: 1_700_000_002_000_000_000, Kind: rows.ValFloat, Float: math.Inf(-1)},
		{TS: 1_700_000_003_000_000_000, Kind: rows.ValFloat, Float: math.NaN()},
		{TS: 1_700_000_004_000_000_000, Kind: rows.ValNum, Text: "18446744073709551615"},
		{TS: 1_700_000_005_000_000_000, Kind: rows.ValNum, Text: "-12.50"},
		{TS: 1_700_000_006_000_000_000, Kind: rows.ValBool, Int: 1},
		{TS: 1_700_000_007_000_000_000, Kind: rows.ValBool, Int: 0},
		{TS: 1_700_000_008_000_000_000, Kind: rows.ValText, Text: "RATE_REDUCE é"},
		{TS: 1_700_000_009_000_000_000, Kind: rows.ValText, Text: ""},
		{TS: 1_700_000_010_000_000_000, Kind: rows.ValNone, Flags: rows.Deleted | rows.Initial},
		{TS: 900_000_000_000_000_001, Kind: rows.ValInt, Int: 1}, // 1998
		{TS: -1_500, Kind: rows.ValInt, Int: 2},                  // before 1970
	} {
		s.SeriesID = id + int64(i)
		b.Samples = append(b.Samples, s)
	}
	w, _, stop := newWriter(t, pool)
	if err := w.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	stop()

	if _, err := pool.Exec(ctx, `CREATE TABLE samples_pgx (LIKE samples)`); err != nil {
		t.Fatal(err)
	}
	var in [][]any
	for _, s := range b.Samples {
		r := []any{time.Unix(0, s.TS), s.SeriesID, nil, nil, nil, nil, nil, int16(s.Flags), b.ID}
		switch s.Kind {
		case rows.ValInt:
			r[2] = s.Int
		case rows.ValFloat:
			r[3] = s.Float
		case rows.ValNum:
			r[4] = s.Text
		case rows.ValBool:
			r[5] = s.Int != 0
		case rows.ValText:
			r[6] = s.Text
		}
		in = append(in, r)
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"samples_pgx"},
		[]string{"ts", "series_id", "v_int", "v_float", "v_num", "v_bool", "v_text", "flags", "batch_id"}, pgx.CopyFromRows(in)); err != nil {
		t.Fatal(err)
	}
	read := func(table string) []string {
		rs, err := pool.Query(ctx, `SELECT concat_ws('|', ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id, v_text IS NULL)
			FROM `+table+` ORDER BY series_id`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := read("samples_pgx"), read("samples")
	if len(got) != len(b.Samples) {
		t.Fatalf("%d samples stored, want %d", len(got), len(b.Samples))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("samples (-pgx CopyFrom +writer):\n%s", diff)
	}
}
