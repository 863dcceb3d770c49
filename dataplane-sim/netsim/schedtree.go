package netsim

import "github.com/lhcnp/lhcnp/dataplane-sim/engine"

// minTree is a segment tree of times over the indexes 0..n-1 (a host's
// round robin of sender QPs): setting one and finding the first index from
// a given one whose time is at most t cost O(log n) instead of a scan. The
// leaves past n hold engine.Never.
type minTree struct {
	n    int           // indexes in use
	size int           // leaves: a power of two ≥ n (0 when empty)
	t    []engine.Time // t[1] the root, t[size+i] leaf i; t[k] = min(t[2k], t[2k+1])
}

// at returns the time of index i.
func (m *minTree) at(i int) engine.Time { return m.t[m.size+i] }

// min returns the least time of all, Never when empty.
func (m *minTree) min() engine.Time {
	if m.size == 0 {
		return engine.Never
	}
	return m.t[1]
}

// set gives index i the time v.
func (m *minTree) set(i int, v engine.Time) {
	k := m.size + i
	m.t[k] = v
	for k > 1 {
		k >>= 1
		w := min(m.t[2*k], m.t[2*k+1])
		if m.t[k] == w {
			// The ancestors are the minima of what they were.
			break
		}
		m.t[k] = w
	}
}

// push appends an index with time v.
func (m *minTree) push(v engine.Time) {
	if m.n == m.size {
		m.rebuild(m.leaves(), m.n+1)
	}
	m.n++
	m.set(m.n-1, v)
}

// pop drops the last index.
func (m *minTree) pop() {
	m.set(m.n-1, engine.Never)
	m.n--
}

// moveLeaf gives index k the time of index i, k ≤ i, without updating
// the tree above the leaves: a compaction moves leaves down in place, then
// truncate rebuilds it (no copy of the leaves to allocate).
func (m *minTree) moveLeaf(k, i int) { m.t[m.size+k] = m.t[m.size+i] }

// truncate keeps indexes 0..n-1 and recomputes the tree above the leaves.
func (m *minTree) truncate(n int) {
	for i := n; i < m.n; i++ {
		m.t[m.size+i] = engine.Never
	}
	m.n = n
	for k := m.size - 1; k >= 1; k-- {
		m.t[k] = min(m.t[2*k], m.t[2*k+1])
	}
}

// leaves returns a copy of the times of indexes 0..n-1.
func (m *minTree) leaves() []engine.Time {
	return append([]engine.Time(nil), m.t[m.size:m.size+m.n]...)
}

// rebuild lays out the tree for at least want indexes with leaves l.
func (m *minTree) rebuild(l []engine.Time, want int) {
	size := max(m.size, 1)
	for size < want {
		size *= 2
	}
	if size != m.size {
		m.size = size
		m.t = make([]engine.Time, 2*size)
	}
	for i := range size {
		v := engine.Never
		if i < len(l) {
			v = l[i]
		}
		m.t[size+i] = v
	}
	for k := size - 1; k >= 1; k-- {
		m.t[k] = min(m.t[2*k], m.t[2*k+1])
	}
}

// first returns the least index ≥ lo whose time is at most v, or -1.
func (m *minTree) first(lo int, v engine.Time) int {
	if lo >= m.n {
		return -1
	}
	k := m.size + lo
	if m.t[k] > v {
		// Up while k is a right child, then over to the right sibling,
		// until a subtree to the right of lo holds a time at most v.
		for {
			for k&1 == 1 {
				k >>= 1
			}
			if k == 0 {
				return -1
			}
			k++
			if m.t[k] <= v {
				break
			}
		}
		for k < m.size {
			k *= 2
			if m.t[k] > v {
				k++
			}
		}
	}
	return k - m.size
}
