// Package rows turns one target's gNMI notifications into the rows the
// collector stores: samples (one typed value per leaf and timestamp),
// series (one per target and path, first seen), and Long-haul CNP events
// (a queue's last-cnp changing). It keeps per series the last stored
// timestamp (so a re-sent value is dropped, never stored twice) and the
// last counter value (so a counter going backwards is flagged as a reset).
//
// It knows the schema (gnmi/schema) but neither the database nor gRPC
// streams: batches are plain values, written by collector/writer and
// spilled by collector/spill.
package rows

import (
	"crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// Flags of a sample (the samples.flags column).
type Flags int16

// The flag bits.
const (
	// Initial marks a value received before the subscription's
	// sync_response: the target's state when the collector (re)subscribed.
	Initial Flags = 1 << 0
	// Deleted marks a gNMI delete: the path stopped existing at TS.
	Deleted Flags = 1 << 1
	// Reset marks a counter lower than its previous sample (the switch
	// restarted): a rate must not be computed across it.
	Reset Flags = 1 << 2
	// Carried marks a copy retention made (migration 008,
	// lhcnp_carry_forward): a series' last value before the retention
	// horizon, stamped at the horizon so that the rows kept still find it.
	// The switch never sent it at that time: a value to start from, not a
	// change.
	Carried Flags = 1 << 3
)

// ValueKind says which value column of a sample holds its value.
type ValueKind uint8

// The value columns.
const (
	ValNone  ValueKind = iota // a delete
	ValInt                    // v_int
	ValFloat                  // v_float
	ValNum                    // v_num (Text holds the decimal string)
	ValBool                   // v_bool (Int is 0 or 1)
	ValText                   // v_text
)

// Sample is one row of samples (and, the last of its series in a batch, of
// latest).
type Sample struct {
	TS       int64 // the switch's timestamp, ns since the Unix epoch
	SeriesID int64
	Kind     ValueKind
	Int      int64
	Float    float64
	Text     string
	Flags    Flags
}

// Series is one row of series.
type Series struct {
	ID         int64
	Target     string
	Path       string // canonical path with keys
	SchemaPath string // the same without keys
	Keys       []Key  // list keys along the path, in path order
	YangType   string
	Unit       string
	FirstSeen  int64 // ns since the Unix epoch
}

// Key is one list key of a series' path.
type Key struct{ Name, Value string }

// Event is one row of events.
type Event struct {
	TS                 int64
	Target             string
	Kind               string // "cnp"
	Interface          string
	Queue              int64
	Action             string
	Parameter          int64
	CongestionLevel    int64
	SourceAddress      string
	DestinationAddress string
	SourceQP           int64
	DestinationQP      int64
	// Details holds the other last-cnp leaves (format, metric) as a JSON
	// object.
	Details string
}

// Batch is what the writer stores in one transaction. ID is chosen when the
// batch is formed and kept through the spill, so a replayed batch is
// recognised by the ledger.
type Batch struct {
	ID        int64
	Collector string
	Target    string
	Epoch     int64
	Series    []Series
	Samples   []Sample
	Events    []Event
}

// Rows is the number of rows the batch stores in samples and events.
func (b *Batch) Rows() int { return len(b.Samples) + len(b.Events) }

// TSRange returns the first and last sample timestamps (0, 0 when none).
func (b *Batch) TSRange() (first, last int64) {
	for i, s := range b.Samples {
		if i == 0 || s.TS < first {
			first = s.TS
		}
		if s.TS > last {
			last = s.TS
		}
	}
	return first, last
}

// SeriesID is the id of a target's path: the FNV-1a 64-bit hash of the
// target, a NUL and the canonical path (store.PathString), with the top
// bit cleared so it is a positive bigint.
func SeriesID(target, path string) int64 {
	h := fnv.New64a()
	h.Write([]byte(target))
	h.Write([]byte{0})
	h.Write([]byte(path))
	return int64(h.Sum64() & math.MaxInt64)
}

// FNV-1a 64-bit, the hash of series ids, fed piecewise so a notification's
// prefix is hashed once for all its updates.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvByte(h uint64, c byte) uint64 { return (h ^ uint64(c)) * fnvPrime }

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// targetHash is the hash state after the target and its NUL.
func targetHash(target string) uint64 { return fnvByte(fnvString(fnvOffset, target), 0) }

// fnvElems adds the elements as store.PathString writes them.
func fnvElems(h uint64, elems []*gnmi.PathElem) uint64 {
	var arr [4]string
	names := arr[:0]
	for _, e := range elems {
		h = fnvString(fnvByte(h, '/'), e.GetName())
		keys := e.GetKey()
		if len(keys) == 0 {
			continue
		}
		names = names[:0]
		for k := range keys {
			names = append(names, k)
		}
		if len(names) > 1 {
			slices.Sort(names)
		}
		for _, k := range names {
			h = fnvByte(fnvString(fnvByte(h, '['), k), '=')
			for _, r := range keys[k] {
				if r == ']' || r == '\\' {
					h = fnvByte(h, '\\')
				}
				if r < utf8.RuneSelf {
					h = fnvByte(h, byte(r))
					continue
				}
				var buf [utf8.UTFMax]byte
				for _, c := range utf8.AppendRune(buf[:0], r) {
					h = fnvByte(h, c)
				}
			}
			h = fnvByte(h, ']')
		}
	}
	return h
}

// joinedID is SeriesID(target, store.PathString(prefix + path)) from the
// hash state after the target and the prefix (pre: the prefix's element
// count), without building the path or its string.
func joinedID(afterPrefix uint64, pre int, p []*gnmi.PathElem) int64 {
	h := afterPrefix
	if pre == 0 && len(p) == 0 {
		h = fnvByte(h, '/')
	}
	return int64(fnvElems(h, p) & math.MaxInt64)
}

// pathID is SeriesID(target, store.PathString(p)) without building the
// string: the same bytes go through the same hash.
func pathID(target string, p *gnmi.Path) int64 {
	return joinedID(targetHash(target), 0, p.GetElem())
}

// FormatValue renders a sample's value as text (dead letters, logs).
func (s Sample) FormatValue() string {
	switch s.Kind {
	case ValInt:
		return strconv.FormatInt(s.Int, 10)
	case ValFloat:
		return strconv.FormatFloat(s.Float, 'g', -1, 64)
	case ValBool:
		return strconv.FormatBool(s.Int != 0)
	case ValNum, ValText:
		return s.Text
	}
	return ""
}

// NewBatchID returns a random positive 63-bit batch id. Ids are not
// coordinated between collectors; the writer tells a replay (the ledger
// row has the same target, row count and timestamps) from a collision (it
// has not: the batch gets a new id), so a collision costs a retry, not a
// lost batch.
func NewBatchID() int64 {
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:]) & math.MaxInt64)
}
