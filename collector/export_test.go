package collector

import "google.golang.org/grpc"

// WithReadLatestFault calls f before each read of the latest table on a
// standby's promotion; an error fails that read.
func WithReadLatestFault(f func(target string) error) Option {
	return func(o *options) {
		o.readLatestFault = func(target, phase string) error {
			if phase != latestPromote {
				return nil
			}
			return f(target)
		}
	}
}

// WithHandedOff calls f when a handover of target has stopped the loop,
// before it releases the lease; the handover waits for f.
func WithHandedOff(f func(target string)) Option { return func(o *options) { o.handedOff = f } }

// WithDialOptions adds gRPC dial options to the targets' connections (a
// test's interceptors).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOpts = append(o.dialOpts, opts...) }
}

// ReadyOf is the announcement the collector holds of a collector ready to
// take target over: by whom, in which of its stream sessions.
func (c *Collector) ReadyOf(target string) (by string, session uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.pl.ReadyOf(target)
	return r.By, r.Session, ok
}

// WithTableRead calls f after each read of the targets table (whether it
// succeeded or not), in the reconcile loop.
func WithTableRead(f func()) Option { return func(o *options) { o.tableRead = f } }

// ConverterSeries is how many series the converter of target keeps state
// for (rows.Converter.Tracked); call it once the collector has stopped.
func (c *Collector) ConverterSeries(target string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conv := c.convs[target]; conv != nil {
		return conv.Tracked()
	}
	return -1
}
