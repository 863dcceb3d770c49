package writer

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const seedSQL = `SELECT l.series_id, l.ts, coalesce(l.v_int, 0), s.path FROM latest l JOIN series s ON s.id = l.series_id WHERE s.target = $1`

// Stored is what the latest table holds of a series: its id, the
// timestamp rounded up within its microsecond (what PostgreSQL keeps;
// anything in the same microsecond is the stored value), the integer value
// and whether the series is a counter.
type Stored struct {
	ID, TS    int64
	V         uint64
	IsCounter bool
}

// ReadLatest reads what the latest table holds of each series of a target.
// isCounter tells, from a series' path, whether it is a counter.
func ReadLatest(ctx context.Context, pool *pgxpool.Pool, name string, isCounter func(path string) bool) ([]Stored, error) {
	rs, err := pool.Query(ctx, seedSQL, name)
	if err != nil {
		return nil, err
	}
	var out []Stored
	var id, v int64
	var ts time.Time
	var path string
	_, err = pgx.ForEachRow(rs, []any{&id, &ts, &v, &path}, func() error {
		out = append(out, Stored{ID: id, TS: ts.UnixNano()/1000*1000 + 999, V: uint64(v), IsCounter: isCounter(path)})
		return nil
	})
	return out, err
}
