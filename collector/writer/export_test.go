package writer

// SetCitusCacheMax sets the bound of the writer's Citus caches for a test
// and returns what restores it.
func SetCitusCacheMax(n int) (restore func()) {
	old := citusCacheMax
	citusCacheMax = n
	return func() { citusCacheMax = old }
}
