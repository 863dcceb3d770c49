package collector

// WithReadLatestFault calls f before each read of the latest table on a
// standby's promotion; an error fails that read.
func WithReadLatestFault(f func(target string) error) Option {
	return func(o *options) { o.readLatestFault = f }
}

// ReadyOf is the announcement the collector holds of a collector ready to
// take target over: by whom, in which of its stream sessions.
func (c *Collector) ReadyOf(target string) (by string, session uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.ready[target]
	return r.by, r.session, ok
}
