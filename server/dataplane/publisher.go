package dataplane

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// DefaultInterval is how often the Publisher samples the dataplane.
const DefaultInterval = 100 * time.Millisecond

// Source gives the state tree of the dataplane (a *Binding, or a fake).
type Source interface {
	Snapshot(ctx context.Context) (*oc.Root, error)
}

type pubOptions struct {
	every time.Duration
	clk   clock.Clock
}

// PublisherOption configures a Publisher.
type PublisherOption func(*pubOptions)

// WithInterval sets the sampling interval (default DefaultInterval).
func WithInterval(d time.Duration) PublisherOption { return func(o *pubOptions) { o.every = d } }

// WithClock sets the clock of timestamps and of the sampling timer.
func WithClock(c clock.Clock) PublisherOption { return func(o *pubOptions) { o.clk = c } }

// Publisher writes the dataplane's state into the store: every read-only
// leaf of the state tree, with its kind (counter, gauge, discrete), stamped
// with the wall-clock time of the snapshot (the store keeps timestamps
// monotonic). The store notifies subscribers of changed values only; a
// leaf that is no longer in the tree (an aged flow) is deleted. Config
// leaves are not its business: the target publishes them on commit.
type Publisher struct {
	s   *schema.Schema
	st  *store.Store
	src Source
	o   pubOptions

	mu        sync.Mutex // one publication at a time
	published map[pathKey]*gnmi.Path
	batch     store.Batch
}

// pathKey identifies a published leaf: a 128-bit hash of its path, cheaper
// than the path string for the thousands of leaves of every publication.
type pathKey [2]uint64

var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(p *gnmi.Path) pathKey {
	var k pathKey
	for i, seed := range keySeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		for _, e := range p.GetElem() {
			h.WriteString(e.GetName())
			h.WriteByte(0)
			switch len(e.GetKey()) {
			case 0:
			case 1:
				for kn, kv := range e.GetKey() {
					h.WriteString(kn)
					h.WriteByte(1)
					h.WriteString(kv)
					h.WriteByte(2)
				}
			default:
				names := make([]string, 0, len(e.GetKey()))
				for kn := range e.GetKey() {
					names = append(names, kn)
				}
				slices.Sort(names)
				for _, kn := range names {
					h.WriteString(kn)
					h.WriteByte(1)
					h.WriteString(e.GetKey()[kn])
					h.WriteByte(2)
				}
			}
			h.WriteByte(3)
		}
		k[i] = h.Sum64()
	}
	return k
}

// NewPublisher returns a publisher of src's state into st.
func NewPublisher(s *schema.Schema, st *store.Store, src Source, opts ...PublisherOption) *Publisher {
	o := pubOptions{every: DefaultInterval, clk: clock.Real{}}
	for _, opt := range opts {
		opt(&o)
	}
	return &Publisher{s: s, st: st, src: src, o: o, published: map[pathKey]*gnmi.Path{}}
}

// PublishNow takes a snapshot and publishes it.
func (p *Publisher) PublishNow(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	root, err := p.src.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("dataplane: snapshot: %w", err)
	}
	ts := p.o.clk.Now().UnixNano()
	vals, err := p.s.Values(root)
	if err != nil {
		return err
	}
	p.batch.Reset()
	cur := make(map[pathKey]*gnmi.Path, len(vals))
	for _, v := range vals {
		l, ok := p.s.LeafAt(v.Path)
		if !ok || l.Class == schema.ClassConfig {
			continue // list keys of config lists belong to the config
		}
		cur[keyOf(v.Path)] = v.Path
		p.batch.Update(v.Path, v.Val, l.Kind)
	}
	for k, path := range p.published {
		if _, ok := cur[k]; !ok {
			p.batch.Delete(path)
		}
	}
	p.published = cur
	if _, err := p.st.Apply(&p.batch, ts); err != nil {
		return fmt.Errorf("dataplane: publish: %w", err)
	}
	return nil
}

// Run publishes every interval until ctx ends; a failed publication is
// retried at the next tick. It returns ctx.Err().
func (p *Publisher) Run(ctx context.Context) error {
	t := p.o.clk.NewTimer(p.o.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
			_ = p.PublishNow(ctx)
			t.Reset(p.o.every)
		}
	}
}
