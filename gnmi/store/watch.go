package store

import (
	"reflect"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// The watch tree holds the patterns of every watcher, shaped like the paths
// they match, so that an Apply finds the watchers of a changed leaf in one
// walk down its path instead of testing every pattern.
type mnode struct {
	watches  []*watch             // patterns ending here: they match everything below
	children map[string][]*mchild // by element name, Wildcard included
	multi    *mnode               // the "..." branch
}

type mchild struct {
	keys map[string]string
	node *mnode
}

type watch struct {
	w       Watcher
	pat     Pattern
	stamp   uint64 // the change that last matched, to notify a watcher once per change
	pending []Change
}

// Watch registers w for the changes of every leaf matching p, from the next
// Apply on. It returns a function that removes the watch; after it returns,
// w is not called again.
func (s *Store) Watch(p Pattern, w Watcher) (cancel func()) {
	wt := &watch{w: w, pat: p}
	s.mu.Lock()
	s.watches.add(p.elems, wt)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.watches.remove(p.elems, wt)
		s.mu.Unlock()
	}
}

func (m *mnode) add(elems []pelem, wt *watch) {
	if len(elems) == 0 {
		m.watches = append(m.watches, wt)
		return
	}
	e := elems[0]
	if e.multi {
		if m.multi == nil {
			m.multi = &mnode{}
		}
		m.multi.add(elems[1:], wt)
		return
	}
	for _, c := range m.children[e.name] {
		if sameKeys(c.keys, e.keys) {
			c.node.add(elems[1:], wt)
			return
		}
	}
	if m.children == nil {
		m.children = map[string][]*mchild{}
	}
	c := &mchild{keys: e.keys, node: &mnode{}}
	m.children[e.name] = append(m.children[e.name], c)
	c.node.add(elems[1:], wt)
}

// remove deletes wt and reports whether m is left empty.
func (m *mnode) remove(elems []pelem, wt *watch) bool {
	if len(elems) == 0 {
		for i, w := range m.watches {
			if w == wt {
				m.watches = append(m.watches[:i], m.watches[i+1:]...)
				break
			}
		}
	} else if e := elems[0]; e.multi {
		if m.multi != nil && m.multi.remove(elems[1:], wt) {
			m.multi = nil
		}
	} else {
		cs := m.children[e.name]
		for i, c := range cs {
			if sameKeys(c.keys, e.keys) {
				if c.node.remove(elems[1:], wt) {
					cs = append(cs[:i], cs[i+1:]...)
					if len(cs) == 0 {
						delete(m.children, e.name)
					} else {
						m.children[e.name] = cs
					}
				}
				break
			}
		}
	}
	return len(m.watches) == 0 && len(m.children) == 0 && m.multi == nil
}

func sameKeys(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// match calls fn for every watch whose pattern matches the concrete path.
func (m *mnode) match(path []*gnmi.PathElem, fn func(*watch)) {
	for _, w := range m.watches {
		fn(w)
	}
	if m.multi != nil {
		for i := 0; i <= len(path); i++ {
			m.multi.match(path[i:], fn)
		}
	}
	if len(path) == 0 || len(m.children) == 0 {
		return
	}
	pe := path[0]
	for _, c := range m.children[pe.Name] {
		if keysMatch(c.keys, pe.Key) {
			c.node.match(path[1:], fn)
		}
	}
	for _, c := range m.children[Wildcard] {
		if keysMatch(c.keys, pe.Key) {
			c.node.match(path[1:], fn)
		}
	}
}

func keysMatch(want, got map[string]string) bool {
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

// notifyLocked hands each watcher the changes that match its pattern, in
// order, one Notify per watch per Apply.
func (s *Store) notifyLocked(changes []Change) {
	if len(changes) == 0 || (len(s.watches.watches) == 0 && len(s.watches.children) == 0 && s.watches.multi == nil) {
		return
	}
	for i := range changes {
		s.stamp++
		stamp := s.stamp
		c := changes[i]
		s.watches.match(c.Leaf.path.Elem, func(w *watch) {
			if w.stamp == stamp {
				return
			}
			w.stamp = stamp
			if len(w.pending) == 0 {
				s.touched = append(s.touched, w)
			}
			w.pending = append(w.pending, c)
		})
	}
	for _, w := range s.touched {
		w.w.Notify(w.pending)
		clear(w.pending)
		w.pending = w.pending[:0]
	}
	clear(s.touched)
	s.touched = s.touched[:0]
}
