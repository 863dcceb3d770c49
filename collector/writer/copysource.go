package writer

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/lhcnp/lhcnp/collector/rows"
)

// batchCursor walks one slice of every batch in turn (their samples, or
// their events): the current element is element i-1 of bs[b].
type batchCursor struct {
	bs   []*rows.Batch
	b, i int
}

// next moves to the next element; n is the length of a batch's slice.
func (c *batchCursor) next(n func(*rows.Batch) int) bool {
	for c.b < len(c.bs) {
		if c.i < n(c.bs[c.b]) {
			c.i++
			return true
		}
		c.b, c.i = c.b+1, 0
	}
	return false
}

// copySamples writes the samples of bs with one pgx CopyFrom. pgx caches the
// statement description per connection (the default exec mode), so only a
// connection's first COPY pays its round trip.
func copySamples(ctx context.Context, conn *pgx.Conn, bs []*rows.Batch) (int64, error) {
	return conn.CopyFrom(ctx, pgx.Identifier{"samples"}, sampleColumns, &sampleSource{batchCursor: batchCursor{bs: bs}})
}

// sampleSource feeds CopyFrom the samples of batches, in sampleColumns'
// order. Its values are pointers to pgtype values it refills for each row:
// a pointer in an interface needs no allocation, pgx's plan for a
// *pgtype.Int8 (an Int64Valuer) reads it without reflection or boxing, and
// pgx encodes a row before it asks for the next one, so reusing the fields
// is safe. A nil is NULL.
type sampleSource struct {
	batchCursor

	vals                  [9]any
	ts                    pgtype.Timestamptz
	series, vInt, batchID pgtype.Int8
	vFloat                pgtype.Float8
	vBool                 pgtype.Bool
	vText                 pgtype.Text
	flags                 pgtype.Int2
}

func (c *sampleSource) Next() bool { return c.next(func(b *rows.Batch) int { return len(b.Samples) }) }

func (c *sampleSource) Err() error { return nil }

// Values are ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags,
// batch_id: the sample's value column set, the others NULL.
func (c *sampleSource) Values() ([]any, error) {
	b := c.bs[c.b]
	s := &b.Samples[c.i-1]
	c.ts = pgtype.Timestamptz{Time: time.Unix(0, s.TS), Valid: true}
	c.series = pgtype.Int8{Int64: s.SeriesID, Valid: true}
	c.flags = pgtype.Int2{Int16: int16(s.Flags), Valid: true}
	c.batchID = pgtype.Int8{Int64: b.ID, Valid: true}
	v := &c.vals
	*v = [9]any{0: &c.ts, 1: &c.series, 7: &c.flags, 8: &c.batchID}
	switch s.Kind {
	case rows.ValInt:
		c.vInt = pgtype.Int8{Int64: s.Int, Valid: true}
		v[2] = &c.vInt
	case rows.ValFloat:
		c.vFloat = pgtype.Float8{Float64: s.Float, Valid: true}
		v[3] = &c.vFloat
	case rows.ValNum:
		// The decimal text, scanned into a numeric by pgx as for any
		// string given to a numeric column.
		v[4] = s.Text
	case rows.ValBool:
		c.vBool = pgtype.Bool{Bool: s.Int != 0, Valid: true}
		v[5] = &c.vBool
	case rows.ValText:
		c.vText = pgtype.Text{String: s.Text, Valid: true}
		v[6] = &c.vText
	}
	return v[:], nil
}
