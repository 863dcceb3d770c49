// Package store is the telemetry tree of one gNMI target: leaves keyed by
// gNMI path, each holding a typed value, a timestamp and a Kind. Publishers
// (the state publisher bound to the dataplane, and Set for the configuration)
// write through Apply; Subscribe and Get read through Walk and Watch.
//
// The store is schema-agnostic: it knows paths and values, not YANG. It must
// not depend on gen/, on the dataplane or on any RPC handler.
//
// A leaf's timestamp is the time its value last changed (gNMI's ON_CHANGE
// meaning), whatever the subscription mode: an update that brings the value
// the leaf holds leaves its timestamp (and version) alone, so the same leaf
// read through two subscriptions started apart carries the same timestamp.
// Timestamps are monotonic per leaf: an update older than the leaf's value
// is stamped with the leaf's timestamp (a clock that stepped back), or, in a
// store that mirrors another target's notifications (WithSourceTimestamps),
// dropped, as openconfig/gnmi's cache does; one leaf's timestamp never moves
// another's.
package store

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// Kind says what a leaf is; TARGET_DEFINED subscriptions sample counters and
// gauges and stream config and discrete state on change.
type Kind uint8

// The kinds of leaf. The publisher supplies the kind with every update.
const (
	KindUnknown Kind = iota // treated like DiscreteState
	Config
	Counter
	Gauge
	DiscreteState
)

// Sampled reports whether TARGET_DEFINED serves the kind by sampling.
func (k Kind) Sampled() bool { return k == Counter || k == Gauge }

func (k Kind) String() string {
	switch k {
	case Config:
		return "config"
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case DiscreteState:
		return "discrete-state"
	}
	return "unknown"
}

// Value is one immutable version of a leaf's value. Never modify a Value or
// its TypedValue: it is shared with every subscriber queue holding it.
type Value struct {
	TV *gnmi.TypedValue
	// TS is when the value last changed (in a WithSourceTimestamps store:
	// the timestamp of the newest update received), in ns since the Unix
	// epoch.
	TS int64
	// Ver is the store sequence number of the Apply that last changed TV;
	// equal Ver means equal value (suppress_redundant uses it).
	Ver uint64
}

// Node is a node of the tree. Path and Key are immutable and safe to read
// from any goroutine; the value is read through Walk, Get or a Change.
type Node struct {
	elem     *gnmi.PathElem
	parent   *Node
	children map[childKey]*Node // interior nodes only
	path     *gnmi.Path         // leaves only: the full path, sharing elems with siblings
	key      string             // leaves only: canonical path string
	kind     Kind
	val      *Value // non-nil exactly for live leaves
}

type childKey struct {
	name string
	keys string // keyString of the elem's keys
}

// Path returns the full path of a leaf (no origin, no target). It is shared:
// do not modify it.
func (n *Node) Path() *gnmi.Path { return n.path }

// Parent returns the node's parent (nil for the root). Leaves with the same
// parent share the elements of their paths up to it.
func (n *Node) Parent() *Node { return n.parent }

// Key returns the canonical string of the leaf's path, e.g.
// "/interfaces/interface[name=eth0]/state/counters/in-octets".
func (n *Node) Key() string { return n.key }

// Change is one leaf that changed in an Apply.
type Change struct {
	Leaf *Node
	Val  *Value // nil when the leaf was deleted
	Kind Kind
	TS   int64  // the Apply's timestamp
	Seq  uint64 // the Apply's sequence number; later changes have larger Seq
}

// Watcher receives the changes matching a watched pattern. Notify is called
// with the store locked, in Apply order: it must not block and must not call
// the Store. The slice is reused after Notify returns.
type Watcher interface {
	Notify(changes []Change)
}

// Store is the tree. The zero value is not usable; call New.
type Store struct {
	mu     sync.RWMutex
	root   *Node
	leaves int
	seq    uint64
	lastTS int64
	clk    clock.Clock
	source bool // WithSourceTimestamps

	watches *mnode
	stamp   uint64
	touched []*watch
	changes []Change

	// During an Apply: the interior levels of the last updated path.
	prev []level
}

// level is one element of the previous path of an Apply and its node, with
// a single key unpacked so that comparing the next path's element costs a
// lookup, not a map iteration.
type level struct {
	name string
	keys map[string]string
	k, v string // the key when there is exactly one
	node *Node
}

func newLevel(pe *gnmi.PathElem, n *Node) level {
	l := level{name: pe.Name, keys: pe.Key, node: n}
	if len(pe.Key) == 1 {
		for k, v := range pe.Key {
			l.k, l.v = k, v
		}
	}
	return l
}

// same reports whether pe names the same child as the level.
func (l *level) same(pe *gnmi.PathElem) bool {
	if pe.GetName() != l.name || len(pe.GetKey()) != len(l.keys) {
		return false
	}
	switch len(l.keys) {
	case 0:
		return true
	case 1:
		v, ok := pe.Key[l.k]
		return ok && v == l.v
	}
	for k, v := range l.keys {
		if pv, ok := pe.Key[k]; !ok || pv != v {
			return false
		}
	}
	return true
}

type options struct {
	clk    clock.Clock
	source bool
}

// Option configures a Store.
type Option func(*options)

// WithClock sets the clock that stamps an Apply given a zero timestamp.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// WithSourceTimestamps makes the store a mirror of another target's
// notifications (the collector's northbound): every update keeps the
// timestamp it comes with, an unchanged value included, and an update older
// than the one the leaf holds is dropped (a target's initial sync is not in
// time order), never restamped. Deletes apply whatever their timestamp.
func WithSourceTimestamps() Option { return func(o *options) { o.source = true } }

// New returns an empty store.
func New(opts ...Option) *Store {
	o := options{clk: clock.Real{}}
	for _, opt := range opts {
		opt(&o)
	}
	return &Store{root: &Node{children: map[childKey]*Node{}}, clk: o.clk, source: o.source, watches: &mnode{}}
}

// Batch is a list of updates and deletes applied together with one
// timestamp. A Batch may be reused after Reset.
type Batch struct {
	ops []op
}

type op struct {
	path *gnmi.Path
	val  *gnmi.TypedValue
	kind Kind
	del  bool
}

// Update adds a leaf update. The path must be concrete (every key given, no
// wildcards); origin and target are ignored. The store keeps v: do not
// modify it afterwards.
func (b *Batch) Update(p *gnmi.Path, v *gnmi.TypedValue, k Kind) *Batch {
	b.ops = append(b.ops, op{path: p, val: v, kind: k})
	return b
}

// Delete adds the removal of a leaf or of a whole subtree. The path may hold
// wildcards ("*", "...", omitted keys); every matching node goes.
func (b *Batch) Delete(p *gnmi.Path) *Batch {
	b.ops = append(b.ops, op{path: p, del: true})
	return b
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch, keeping its storage.
func (b *Batch) Reset() {
	clear(b.ops)
	b.ops = b.ops[:0]
}

// ErrPath reports a path that cannot be stored.
var ErrPath = errors.New("bad path")

// Update applies one leaf update; see Apply.
func (s *Store) Update(p *gnmi.Path, v *gnmi.TypedValue, k Kind, ts int64) (int64, error) {
	var b Batch
	b.Update(p, v, k)
	return s.Apply(&b, ts)
}

// Delete removes a leaf or subtree; see Apply.
func (s *Store) Delete(p *gnmi.Path, ts int64) (int64, error) {
	var b Batch
	b.Delete(p)
	return s.Apply(&b, ts)
}

// Apply applies a batch in order with timestamp ts (ns since the Unix epoch;
// zero means now), per leaf as the package comment says. It returns ts (the
// clock's time when zero). Watchers are notified only of real changes:
// a new leaf, a different value, or a deleted leaf. An operation that fails
// (a path through an existing leaf, a nil value) is skipped and reported;
// the others still apply.
func (s *Store) Apply(b *Batch, ts int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts <= 0 {
		ts = s.clk.Now().UnixNano()
	}
	s.lastTS = max(s.lastTS, ts)
	s.seq++
	seq := s.seq
	changes := s.changes[:0]
	var errs []error
	s.prev = s.prev[:0]
	for i := range b.ops {
		o := &b.ops[i]
		if o.del {
			s.prev = s.prev[:0] // the nodes of the previous path may be gone
			pat, err := NewPattern(nil, o.path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			changes = s.deleteLocked(pat, changes, ts, seq)
			continue
		}
		c, changed, err := s.updateLocked(o, ts, seq)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if changed {
			changes = append(changes, c)
		}
	}
	clear(s.prev[:cap(s.prev)])
	s.prev = s.prev[:0]
	s.notifyLocked(changes)
	clear(changes)
	s.changes = changes[:0]
	return ts, errors.Join(errs...)
}

func (s *Store) updateLocked(o *op, ts int64, seq uint64) (Change, bool, error) {
	if o.val == nil || o.val.Value == nil {
		return Change{}, false, fmt.Errorf("%w: %s: nil value", ErrPath, ErrorPath(o.path))
	}
	elems := o.path.GetElem()
	if len(elems) == 0 {
		if len(o.path.GetElement()) > 0 {
			return Change{}, false, fmt.Errorf("%w: %s: deprecated element field", ErrPath, ErrorPath(o.path))
		}
		return Change{}, false, fmt.Errorf("%w: empty path", ErrPath)
	}
	// Consecutive updates usually share their container: start below the
	// longest common prefix with the previous path of this Apply (its nodes
	// are interior nodes, and no delete has run since).
	n := s.root
	start := 0
	for start < len(elems)-1 && start < len(s.prev) && s.prev[start].same(elems[start]) {
		start++
	}
	if start > 0 {
		n = s.prev[start-1].node
	}
	s.prev = s.prev[:start]
	created := false
	for i := start; i < len(elems); i++ {
		pe := elems[i]
		if n.val != nil {
			return Change{}, false, fmt.Errorf("%w: %s: %s is a leaf", ErrPath, ErrorPath(o.path), ErrorPath(&gnmi.Path{Elem: elems[:i]}))
		}
		if pe.GetName() == "" {
			return Change{}, false, fmt.Errorf("%w: %s: empty element name", ErrPath, ErrorPath(o.path))
		}
		ck := childKey{pe.Name, keyString(pe.Key)}
		c := n.children[ck]
		if c == nil {
			if n.children == nil {
				n.children = map[childKey]*Node{}
			}
			c = &Node{elem: copyElem(pe), parent: n}
			if i < len(elems)-1 {
				c.children = map[childKey]*Node{}
			}
			n.children[ck] = c
			created = true
		}
		if i < len(elems)-1 {
			s.prev = append(s.prev, newLevel(pe, c))
		}
		n = c
	}
	if created || (n.val == nil && len(n.children) == 0) {
		n.children = nil
		n.path = fullPath(n)
		n.key = PathString(n.path)
		n.kind = o.kind
		n.val = &Value{TV: o.val, TS: ts, Ver: seq}
		s.leaves++
		return Change{Leaf: n, Val: n.val, Kind: n.kind, TS: ts, Seq: seq}, true, nil
	}
	if n.val == nil {
		return Change{}, false, fmt.Errorf("%w: %s is not a leaf", ErrPath, ErrorPath(o.path))
	}
	if ts < n.val.TS {
		if s.source {
			return Change{}, false, nil // older than what the leaf holds
		}
		ts = n.val.TS
	}
	n.kind = o.kind
	if EqualValues(n.val.TV, o.val) {
		// Unchanged: the leaf keeps the time its value changed, except
		// in a mirror, which keeps its source's timestamps.
		if s.source && ts != n.val.TS {
			n.val = &Value{TV: n.val.TV, TS: ts, Ver: n.val.Ver}
		}
		return Change{}, false, nil
	}
	n.val = &Value{TV: o.val, TS: ts, Ver: seq}
	return Change{Leaf: n, Val: n.val, Kind: n.kind, TS: ts, Seq: seq}, true, nil
}

func (s *Store) deleteLocked(p Pattern, changes []Change, ts int64, seq uint64) []Change {
	var hits []*Node
	walkNodes(s.root, p.elems, func(n *Node) { hits = append(hits, n) })
	for _, n := range hits {
		walkLeaves(n, func(l *Node) {
			changes = append(changes, Change{Leaf: l, Kind: l.kind, TS: ts, Seq: seq})
			l.val = nil
			s.leaves--
		})
		if n.parent == nil {
			n.children = map[childKey]*Node{}
			continue
		}
		// Detach and prune parents left empty.
		for n.parent != nil {
			ck := childKey{n.elem.Name, keyString(n.elem.Key)}
			if n.parent.children[ck] == n {
				delete(n.parent.children, ck)
			}
			n = n.parent
			if len(n.children) > 0 || n.parent == nil {
				break
			}
		}
	}
	return changes
}

// Get returns the value and kind of the leaf at the concrete path p.
func (s *Store) Get(p *gnmi.Path) (*Value, Kind, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.root
	for _, pe := range p.GetElem() {
		n = n.children[childKey{pe.GetName(), keyString(pe.GetKey())}]
		if n == nil {
			return nil, 0, false
		}
	}
	if n.val == nil {
		return nil, 0, false
	}
	return n.val, n.kind, true
}

// Walk calls fn for every leaf matching p, with the store read-locked: fn
// must be quick and must not call the Store.
func (s *Store) Walk(p Pattern, fn func(l *Node, v *Value, k Kind)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	walkNodes(s.root, p.elems, func(n *Node) {
		walkLeaves(n, func(l *Node) { fn(l, l.val, l.kind) })
	})
}

// Len returns the number of leaves.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.leaves
}

// LastTimestamp returns the newest timestamp an Apply was given.
func (s *Store) LastTimestamp() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lastTS
}

// Now returns the store clock's time, in ns since the Unix epoch.
func (s *Store) Now() time.Time { return s.clk.Now() }

func walkLeaves(n *Node, fn func(*Node)) {
	if n.val != nil {
		fn(n)
		return
	}
	for _, c := range n.children {
		walkLeaves(c, fn)
	}
}

// walkNodes calls fn for every node matching the pattern elements.
func walkNodes(n *Node, elems []pelem, fn func(*Node)) {
	if len(elems) == 0 {
		fn(n)
		return
	}
	e := &elems[0]
	if e.multi {
		if len(elems) == 1 {
			fn(n) // a trailing "..." is the whole subtree
			return
		}
		walkNodes(n, elems[1:], fn)
		for _, c := range n.children {
			walkNodes(c, elems, fn)
		}
		return
	}
	if e.name != Wildcard && e.exact {
		if c := n.children[childKey{e.name, e.keyStr}]; c != nil && e.matches(c.elem) {
			walkNodes(c, elems[1:], fn)
			return
		}
	}
	for ck, c := range n.children {
		if (e.name == Wildcard || ck.name == e.name) && e.matches(c.elem) {
			walkNodes(c, elems[1:], fn)
		}
	}
}

func fullPath(n *Node) *gnmi.Path {
	depth := 0
	for p := n; p.parent != nil; p = p.parent {
		depth++
	}
	elems := make([]*gnmi.PathElem, depth)
	for p := n; p.parent != nil; p = p.parent {
		depth--
		elems[depth] = p.elem
	}
	return &gnmi.Path{Elem: elems}
}

func copyElem(pe *gnmi.PathElem) *gnmi.PathElem {
	e := &gnmi.PathElem{Name: pe.Name}
	if len(pe.Key) > 0 {
		e.Key = make(map[string]string, len(pe.Key))
		for k, v := range pe.Key {
			e.Key[k] = v
		}
	}
	return e
}

// keyString is the map key of an element's keys. A single key uses its value
// alone (no allocation); lookups verify the key names.
func keyString(keys map[string]string) string {
	switch len(keys) {
	case 0:
		return ""
	case 1:
		for _, v := range keys {
			return v
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var sb strings.Builder
	for i, k := range names {
		if i > 0 {
			sb.WriteByte(0)
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(keys[k])
	}
	return sb.String()
}

// MaxErrorPathBytes is the most of a path, or of a name or key a request
// gave, that an error message quotes (ErrorPath, ErrorText): a request may
// carry a path of megabytes, which its error would echo back to the
// client and into logs.
const MaxErrorPathBytes = 512

// ErrorPath is PathString for an error message: cut after
// MaxErrorPathBytes, with "… (N bytes)" saying how long it was. A path
// given only in the deprecated element field, which PathString reads as
// the root, is named by its elements: an error about it names what was sent.
func ErrorPath(p *gnmi.Path) string {
	if len(p.GetElem()) == 0 && len(p.GetElement()) > 0 {
		return ErrorText("/" + strings.Join(p.GetElement(), "/"))
	}
	return ErrorText(PathString(p))
}

// ErrorText is s (a path, a name or a key value of a request) for an error
// message: one line of UTF-8, a character that is not printable (a line
// break, a control character) or a byte that is not UTF-8 escaped as Go
// writes them ("\n", "\u2028", "\xff"), as a path's element or key may
// hold them; cut after MaxErrorPathBytes (at a character's start), with
// "… (N bytes)" saying how long s was.
func ErrorText(s string) string {
	if len(s) <= MaxErrorPathBytes && printable(s) {
		return s
	}
	t, cut := escapeCut(s, false)
	if cut {
		return t + cutNote(s)
	}
	return t
}

// ErrorQuote is s for an error message in double quotes, as %q writes it
// (ErrorText's escapes, and a quote and a backslash as \" and \\), cut as
// ErrorText cuts, "… (N bytes)" after the closing quote.
func ErrorQuote(s string) string {
	t, cut := escapeCut(s, true)
	q := `"` + t + `"`
	if cut {
		return q + cutNote(s)
	}
	return q
}

// escapeCut escapes s as ErrorText does (quoted: a quote and a backslash
// too) and cuts it at the first character that would take it past
// MaxErrorPathBytes, reporting whether it did.
func escapeCut(s string, quoted bool) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		t := s[i : i+size]
		switch {
		case r == utf8.RuneError && size == 1:
			t = fmt.Sprintf(`\x%02x`, s[i])
		case !strconv.IsPrint(r), quoted && (r == '"' || r == '\\'):
			q := strconv.Quote(t)
			t = q[1 : len(q)-1]
		}
		if b.Len()+len(t) > MaxErrorPathBytes {
			return b.String(), true
		}
		b.WriteString(t)
		i += size
	}
	return b.String(), false
}

func cutNote(s string) string { return "… (" + strconv.Itoa(len(s)) + " bytes)" }

// printable reports whether ErrorText keeps s as it is: UTF-8, every
// character printable.
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// PathString renders a path as "/a/b[k=v]/c", keys sorted, "]" and "\" in key
// values escaped with "\". It is the canonical key of a leaf.
func PathString(p *gnmi.Path) string {
	var sb strings.Builder
	for _, e := range p.GetElem() {
		sb.WriteByte('/')
		sb.WriteString(e.GetName())
		if len(e.GetKey()) == 0 {
			continue
		}
		names := make([]string, 0, len(e.Key))
		for k := range e.Key {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			sb.WriteByte('[')
			sb.WriteString(k)
			sb.WriteByte('=')
			for _, r := range e.Key[k] {
				if r == ']' || r == '\\' {
					sb.WriteByte('\\')
				}
				sb.WriteRune(r)
			}
			sb.WriteByte(']')
		}
	}
	if sb.Len() == 0 {
		return "/"
	}
	return sb.String()
}
