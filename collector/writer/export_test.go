package writer

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
