package collector

// WithReadLatestFault calls f before each read of the latest table on a
// standby's promotion; an error fails that read.
func WithReadLatestFault(f func(target string) error) Option {
	return func(o *options) { o.readLatestFault = f }
}
