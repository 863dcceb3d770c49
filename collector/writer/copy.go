package writer

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/lhcnp/lhcnp/collector/rows"
)

// copySamplesSQL is the COPY of sampleColumns in PostgreSQL's binary format.
var copySamplesSQL = "COPY " + pgx.Identifier{"samples"}.Sanitize() + " (" + quotedColumns(sampleColumns) + ") FROM STDIN WITH (FORMAT binary)"

func quotedColumns(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// copySamples writes the samples of bs with one COPY in binary format,
// each value encoded straight from its typed field (the columns' types are
// the schema's, fixed by migrations/): no statement description round
// trip, no boxing of values into interfaces, no text. A value that does
// not encode (a numeric that is not a number) aborts the COPY with
// "COPY from stdin failed", which Classify calls a bad row, as pgx's
// CopyFrom does.
func copySamples(ctx context.Context, pc *pgconn.PgConn, bs []*rows.Batch) (int64, error) {
	tag, err := pc.CopyFrom(ctx, &sampleCopy{bs: bs}, copySamplesSQL)
	return tag.RowsAffected(), err
}

// The binary COPY format: a signature, flags and header extension length,
// then per row the field count and each field as length + bytes (-1 for
// NULL), then -1 as the trailer.
var copyHeader = []byte("PGCOPY\n\377\r\n\000\000\000\000\000\000\000\000\000")

// pgEpochMicros is 2000-01-01 UTC, PostgreSQL's timestamp epoch, in
// microseconds since the Unix epoch.
const pgEpochMicros = 946_684_800_000_000

// copyChunkBytes is how much is encoded ahead of the reader.
const copyChunkBytes = 64 << 10

// sampleCopy is an io.Reader of the binary COPY stream of the samples of
// bs, encoded a chunk at a time.
type sampleCopy struct {
	bs      []*rows.Batch
	b, i    int // next sample: bs[b].Samples[i]
	buf     []byte
	off     int
	started bool
	done    bool
	m       *pgtype.Map // numeric only, made when first needed
}

func (c *sampleCopy) Read(p []byte) (int, error) {
	for c.off == len(c.buf) {
		if c.done {
			return 0, io.EOF
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.off:])
	c.off += n
	return n, nil
}

func (c *sampleCopy) fill() error {
	buf := c.buf[:0]
	c.off = 0
	if !c.started {
		buf = append(buf, copyHeader...)
		c.started = true
	}
	for len(buf) < copyChunkBytes && c.b < len(c.bs) {
		b := c.bs[c.b]
		if c.i == len(b.Samples) {
			c.b, c.i = c.b+1, 0
			continue
		}
		var err error
		if buf, err = c.appendRow(buf, &b.Samples[c.i], b.ID); err != nil {
			return err
		}
		c.i++
	}
	if c.b == len(c.bs) {
		buf = binary.BigEndian.AppendUint16(buf, 0xffff)
		c.done = true
	}
	c.buf = buf
	return nil
}

func appendInt64(buf []byte, v int64) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 8)
	return binary.BigEndian.AppendUint64(buf, uint64(v))
}

func appendNull(buf []byte) []byte { return binary.BigEndian.AppendUint32(buf, math.MaxUint32) }

// appendRow encodes ts, series_id, v_int, v_float, v_num, v_bool, v_text,
// flags, batch_id (sampleColumns).
func (c *sampleCopy) appendRow(buf []byte, s *rows.Sample, batchID int64) ([]byte, error) {
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(sampleColumns)))
	// timestamptz: microseconds since 2000-01-01, rounded down as pgx
	// rounds a time.Time.
	us := s.TS / 1000
	if s.TS%1000 < 0 {
		us--
	}
	buf = appendInt64(buf, us-pgEpochMicros)
	buf = appendInt64(buf, s.SeriesID)
	switch s.Kind {
	case rows.ValInt:
		buf = appendInt64(buf, s.Int)
	default:
		buf = appendNull(buf)
	}
	switch s.Kind {
	case rows.ValFloat:
		buf = appendInt64(buf, int64(math.Float64bits(s.Float)))
	default:
		buf = appendNull(buf)
	}
	switch s.Kind {
	case rows.ValNum:
		if c.m == nil {
			c.m = pgtype.NewMap()
		}
		// The decimal text parsed and encoded by pgtype, as pgx's
		// CopyFrom does with a string for a numeric column.
		var n pgtype.Numeric
		if err := c.m.Scan(pgtype.NumericOID, pgtype.TextFormatCode, []byte(s.Text), &n); err != nil {
			return nil, fmt.Errorf("samples.v_num %q: %w", s.Text, err)
		}
		at := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 0)
		out, err := c.m.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, n, buf)
		if err != nil {
			return nil, fmt.Errorf("samples.v_num %q: %w", s.Text, err)
		}
		buf = out
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	default:
		buf = appendNull(buf)
	}
	switch s.Kind {
	case rows.ValBool:
		buf = binary.BigEndian.AppendUint32(buf, 1)
		if s.Int != 0 {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
	default:
		buf = appendNull(buf)
	}
	switch s.Kind {
	case rows.ValText:
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s.Text)))
		buf = append(buf, s.Text...)
	default:
		buf = appendNull(buf)
	}
	buf = binary.BigEndian.AppendUint32(buf, 2)
	buf = binary.BigEndian.AppendUint16(buf, uint16(s.Flags))
	return appendInt64(buf, batchID), nil
}
