package northbound

// WithReadHook calls f between History's reads, where a retention pass
// could commit: "horizon" once the horizon has been checked, before any row
// is read; "tree" once a range's starting tree has gone out, before its
// changes are read; "send" before each batch of rows goes out.
func WithReadHook(f func(stage string)) Option { return func(o *options) { o.readHook = f } }
