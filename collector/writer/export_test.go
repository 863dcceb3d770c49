package writer

import "github.com/lhcnp/lhcnp/collector/rows"

// SetCitusCacheMax sets the bound of the writer's Citus caches for a test
// and returns what restores it.
func SetCitusCacheMax(n int) (restore func()) {
	old := citusCacheMax
	citusCacheMax = n
	return func() { citusCacheMax = old }
}

// DeadLetterSQL is the statement that dead-letters a refused row: target,
// batch id, the row as JSON, the error.
const DeadLetterSQL = deadSQL

// KeepRefused keeps a row of table in b, refused with rowErr and its dead
// letter with err, as the writer does when PostgreSQL refuses both
// (keepRefused).
func (w *Writer) KeepRefused(b *rows.Batch, table string, row any, rowErr, err error) {
	w.keepRefused(b, deadRow{table: table, row: row, err: rowErr}, err)
}
