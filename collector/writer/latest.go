package writer

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/rows"
)

const seedSQL = `SELECT l.series_id, l.ts, l.v_int, l.v_float, l.v_num::text, l.v_bool, l.v_text, l.flags, s.path
FROM latest l JOIN series s ON s.id = l.series_id WHERE s.target = $1`

// Stored is what the latest table holds of a series: its id, the
// timestamp rounded up within its microsecond (what PostgreSQL keeps;
// anything in the same microsecond is the stored value), the integer value
// and whether the series is a counter; its path and the stored value
// itself (a converter rebuilds a queue's last CNP from it).
type Stored struct {
	ID, TS    int64
	V         uint64
	IsCounter bool
	Path      string
	Value     rows.Sample
}

// ReadLatest reads what the latest table holds of each series of a target.
// isCounter tells, from a series' path, whether it is a counter.
func ReadLatest(ctx context.Context, pool *pgxpool.Pool, name string, isCounter func(path string) bool) ([]Stored, error) {
	rs, err := pool.Query(ctx, seedSQL, name)
	if err != nil {
		return nil, err
	}
	var out []Stored
	var id int64
	var ts time.Time
	var vInt *int64
	var vFloat *float64
	var vNum, vText *string
	var vBool *bool
	var flags int16
	var path string
	_, err = pgx.ForEachRow(rs, []any{&id, &ts, &vInt, &vFloat, &vNum, &vBool, &vText, &flags, &path}, func() error {
		s := Stored{ID: id, TS: ts.UnixNano()/1000*1000 + 999, IsCounter: isCounter(path), Path: path,
			Value: rows.Sample{TS: ts.UnixNano(), SeriesID: id, Flags: rows.Flags(flags)}}
		switch v := &s.Value; {
		case vInt != nil:
			v.Kind, v.Int, s.V = rows.ValInt, *vInt, uint64(*vInt)
		case vFloat != nil:
			v.Kind, v.Float = rows.ValFloat, *vFloat
		case vNum != nil:
			v.Kind, v.Text = rows.ValNum, *vNum
		case vBool != nil:
			v.Kind = rows.ValBool
			if *vBool {
				v.Int = 1
			}
		case vText != nil:
			v.Kind, v.Text = rows.ValText, *vText
		}
		out = append(out, s)
		return nil
	})
	return out, err
}
