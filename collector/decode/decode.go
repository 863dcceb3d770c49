// Package decode decodes the responses of a collector's gNMI Subscribe
// stream into messages it reuses: one SubscribeResponse, and the
// notification's updates, paths, path elements and typed values, are
// refilled in place for every response instead of being allocated anew,
// and the strings of path elements, keys and short values are interned.
// It cuts the receive side's allocations (and the garbage collector's work
// that follows them), the largest cost per row of the collector after
// PostgreSQL itself.
//
// It decodes the fields a Subscribe stream carries in practice (update,
// sync_response; a notification's timestamp, prefix, updates, deletes,
// atomic; paths with elements, keys, origin and target; the scalar, bytes
// and JSON typed values). Anything else (extensions, the deprecated
// fields, decimal, leaf-list and any values, unknown fields, a singular
// message given twice, invalid UTF-8, a malformed message) is decoded by
// proto.Unmarshal into a fresh message instead, so the result, and the
// error, is always exactly what proto.Unmarshal gives (FuzzDecode checks
// it).
//
// A decoded response is valid until the next Decode (but for prefixes and
// update paths, which are cached by their encoding and never modified): a
// caller that keeps messages (the collector's northbound store does) must
// use proto messages of its own, and no caller may modify them. A Decoder
// keeps storage for its largest response so far, and at most 4096 cached
// paths and 16384 interned strings.
//
// It depends on gnmi, protobuf and grpc only.
package decode

import (
	"maps"
	"math"
	"unicode/utf8"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Interning: strings up to internMaxBytes are kept in a table of at most
// internMaxEntries (then it starts again), so the names, keys and
// enumeration values a switch repeats are allocated once.
const (
	internMaxBytes   = 64
	internMaxEntries = 1 << 14
)

// pathMaxEntries bounds the cache of decoded paths: a switch sends a few
// thousand containers, each notification with its container as the
// prefix and its leaves' names as the paths, the same bytes every time.
const pathMaxEntries = 1 << 12

// Decoder decodes responses into storage it reuses. It is used by one
// goroutine.
type Decoder struct {
	resp  gnmi.SubscribeResponse
	upd   gnmi.SubscribeResponse_Update
	sync  gnmi.SubscribeResponse_SyncResponse
	notif gnmi.Notification
	last  *gnmi.SubscribeResponse

	updates []*gnmi.Update // the notification's Update backing
	deletes []*gnmi.Path   // its Delete backing
	ups     slab[gnmi.Update]
	paths   slab[pathItem]
	elems   slab[elemItem]
	tvs     slab[gnmi.TypedValue]
	vals    values

	arena   []byte // bytes values of the current response
	scratch []byte // a response received in several buffers, joined
	intern  map[string]string
	// cache maps the encoding of a prefix or an update's path to its
	// decoded path, a copy of its own that no later Decode overwrites.
	cache map[string]*gnmi.Path
}

type pathItem struct {
	p     gnmi.Path
	elems []*gnmi.PathElem
}

type elemItem struct {
	e    gnmi.PathElem
	keys map[string]string
}

// values holds the oneof wrappers of typed values, one slab per kind.
type values struct {
	str    slab[gnmi.TypedValue_StringVal]
	i      slab[gnmi.TypedValue_IntVal]
	u      slab[gnmi.TypedValue_UintVal]
	b      slab[gnmi.TypedValue_BoolVal]
	bytes  slab[gnmi.TypedValue_BytesVal]
	f32    slab[gnmi.TypedValue_FloatVal]
	f64    slab[gnmi.TypedValue_DoubleVal]
	json   slab[gnmi.TypedValue_JsonVal]
	ietf   slab[gnmi.TypedValue_JsonIetfVal]
	ascii  slab[gnmi.TypedValue_AsciiVal]
	pbytes slab[gnmi.TypedValue_ProtoBytes]
}

// slab hands out reused values of T: next returns the n-th of this
// response, allocating only when a response needs more than any before.
type slab[T any] struct {
	items []*T
	n     int
}

func (s *slab[T]) next() *T {
	if s.n == len(s.items) {
		s.items = append(s.items, new(T))
	}
	p := s.items[s.n]
	s.n++
	return p
}

// New returns a Decoder.
func New() *Decoder {
	return &Decoder{intern: map[string]string{}, cache: map[string]*gnmi.Path{}}
}

func (d *Decoder) reset() {
	d.ups.n, d.paths.n, d.elems.n, d.tvs.n = 0, 0, 0, 0
	v := &d.vals
	v.str.n, v.i.n, v.u.n, v.b.n, v.bytes.n, v.f32.n, v.f64.n = 0, 0, 0, 0, 0, 0, 0
	v.json.n, v.ietf.n, v.ascii.n, v.pbytes.n = 0, 0, 0, 0
	d.updates, d.deletes = d.updates[:0], d.deletes[:0]
	d.arena = d.arena[:0]
}

// Decode decodes one SubscribeResponse. The result is the decoder's own
// (valid until the next Decode) or, for what the fast path does not take,
// a fresh message from proto.Unmarshal; the error is proto.Unmarshal's.
func (d *Decoder) Decode(b []byte) (*gnmi.SubscribeResponse, error) {
	d.reset()
	if d.response(b) {
		return &d.resp, nil
	}
	r := new(gnmi.SubscribeResponse)
	if err := proto.Unmarshal(b, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Response is the response of the last message received into d by a
// stream using CallOption (nil before the first).
func (d *Decoder) Response() *gnmi.SubscribeResponse { return d.last }

func (d *Decoder) unmarshal(data mem.BufferSlice) error {
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		d.scratch = d.scratch[:0]
		for _, buf := range data {
			d.scratch = append(d.scratch, buf.ReadOnlyData()...)
		}
		b = d.scratch
	}
	r, err := d.Decode(b)
	if err != nil {
		return err
	}
	d.last = r
	return nil
}

// codec is the proto codec, but for messages received into a *Decoder.
type codec struct{ proto encoding.CodecV2 }

func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if d, ok := v.(*Decoder); ok {
		return d.unmarshal(data)
	}
	return c.proto.Unmarshal(data, v)
}

func (codec) Name() string { return gproto.Name }

// CallOption makes a stream decode what it receives into a *Decoder
// (stream.RecvMsg(d), then d.Response()) with the decoder; every other
// message goes through the proto codec as usual. The content subtype
// stays "proto".
func CallOption() grpc.CallOption {
	return grpc.ForceCodecV2(codec{proto: encoding.GetCodecV2(gproto.Name)})
}

// field reads one tag; ok is false at a malformed tag.
func field(b []byte) (num protowire.Number, typ protowire.Type, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, false
	}
	return num, typ, b[n:], true
}

func bytesField(b []byte) (v, rest []byte, ok bool) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, nil, false
	}
	return v, b[n:], true
}

func varintField(b []byte) (v uint64, rest []byte, ok bool) {
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

// response decodes a SubscribeResponse (update = 1, sync_response = 3).
func (d *Decoder) response(b []byte) bool {
	d.resp.Reset()
	seen := false
	for len(b) > 0 {
		num, typ, rest, ok := field(b)
		if !ok || seen {
			return false // a second oneof field merges or replaces: proto's job
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			var v []byte
			if v, b, ok = bytesField(rest); !ok || !d.notification(v) {
				return false
			}
			d.upd.Update = &d.notif
			d.resp.Response = &d.upd
		case num == 3 && typ == protowire.VarintType:
			var v uint64
			if v, b, ok = varintField(rest); !ok {
				return false
			}
			d.sync.SyncResponse = v != 0
			d.resp.Response = &d.sync
		default:
			return false
		}
		seen = true
	}
	return true
}

// notification decodes timestamp = 1, prefix = 2, update = 4, delete = 5,
// atomic = 6.
func (d *Decoder) notification(b []byte) bool {
	n := &d.notif
	n.Reset()
	for len(b) > 0 {
		num, typ, rest, ok := field(b)
		if !ok {
			return false
		}
		switch typ {
		case protowire.VarintType:
			var v uint64
			if v, b, ok = varintField(rest); !ok {
				return false
			}
			switch num {
			case 1:
				n.Timestamp = int64(v)
			case 6:
				n.Atomic = v != 0
			default:
				return false
			}
		case protowire.BytesType:
			var v []byte
			if v, b, ok = bytesField(rest); !ok {
				return false
			}
			switch num {
			case 2:
				if n.Prefix != nil {
					return false // merged by proto
				}
				n.Prefix, ok = d.cachedPath(v)
			case 4:
				var u *gnmi.Update
				if u, ok = d.update(v); ok {
					d.updates = append(d.updates, u)
				}
			case 5:
				var p *gnmi.Path
				if p, ok = d.path(v); ok {
					d.deletes = append(d.deletes, p)
				}
			default:
				return false
			}
			if !ok {
				return false
			}
		default:
			return false
		}
	}
	if len(d.updates) > 0 {
		n.Update = d.updates
	}
	if len(d.deletes) > 0 {
		n.Delete = d.deletes
	}
	return true
}

// cachedPath decodes a notification's prefix or an update's path, from the
// cache when the same bytes were decoded before: a switch sends the same
// containers as prefixes and the same leaf names under them.
func (d *Decoder) cachedPath(v []byte) (*gnmi.Path, bool) {
	if p, ok := d.cache[string(v)]; ok {
		return p, true
	}
	p, ok := d.path(v)
	if !ok {
		return nil, false
	}
	own := &gnmi.Path{Origin: p.Origin, Target: p.Target}
	if len(p.Elem) > 0 {
		own.Elem = make([]*gnmi.PathElem, len(p.Elem))
		for i, e := range p.Elem {
			own.Elem[i] = &gnmi.PathElem{Name: e.Name, Key: maps.Clone(e.Key)}
		}
	}
	if len(d.cache) >= pathMaxEntries {
		clear(d.cache)
	}
	d.cache[string(v)] = own
	return own, true
}

// update decodes path = 1, val = 3, duplicates = 4.
func (d *Decoder) update(b []byte) (*gnmi.Update, bool) {
	u := d.ups.next()
	u.Reset()
	for len(b) > 0 {
		num, typ, rest, ok := field(b)
		if !ok {
			return nil, false
		}
		switch typ {
		case protowire.VarintType:
			var v uint64
			if v, b, ok = varintField(rest); !ok || num != 4 {
				return nil, false
			}
			u.Duplicates = uint32(v)
		case protowire.BytesType:
			var v []byte
			if v, b, ok = bytesField(rest); !ok {
				return nil, false
			}
			switch {
			case num == 1 && u.Path == nil:
				u.Path, ok = d.cachedPath(v)
			case num == 3 && u.Val == nil:
				u.Val, ok = d.typedValue(v)
			default:
				return nil, false // another field, or one given twice (merged by proto)
			}
			if !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return u, true
}

// eachBytes calls fn with every field of a message whose fields are all
// length-delimited; false at anything else or when fn says so.
func eachBytes(b []byte, fn func(num protowire.Number, v []byte) bool) bool {
	for len(b) > 0 {
		num, typ, rest, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return false
		}
		var v []byte
		if v, b, ok = bytesField(rest); !ok || !fn(num, v) {
			return false
		}
	}
	return true
}

// path decodes origin = 2, elem = 3, target = 4.
func (d *Decoder) path(b []byte) (*gnmi.Path, bool) {
	it := d.paths.next()
	p := &it.p
	p.Reset()
	elems := it.elems[:0]
	ok := eachBytes(b, func(num protowire.Number, v []byte) (ok bool) {
		switch num {
		case 2:
			p.Origin, ok = d.str(v)
		case 3:
			var e *gnmi.PathElem
			if e, ok = d.elem(v); ok {
				elems = append(elems, e)
			}
		case 4:
			p.Target, ok = d.str(v)
		}
		return ok
	})
	it.elems = elems
	if !ok {
		return nil, false
	}
	if len(elems) > 0 {
		p.Elem = elems
	}
	return p, true
}

// elem decodes name = 1 and the key map (2: entries of key = 1, value = 2).
func (d *Decoder) elem(b []byte) (*gnmi.PathElem, bool) {
	it := d.elems.next()
	e := &it.e
	e.Reset()
	keyed := false
	ok := eachBytes(b, func(num protowire.Number, v []byte) (ok bool) {
		switch num {
		case 1:
			e.Name, ok = d.str(v)
		case 2:
			var k, val string
			if k, val, ok = d.mapEntry(v); !ok {
				return false
			}
			if !keyed {
				if it.keys == nil {
					it.keys = make(map[string]string, 2)
				} else {
					clear(it.keys)
				}
				keyed = true
			}
			it.keys[k] = val
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	if keyed {
		e.Key = it.keys
	}
	return e, true
}

func (d *Decoder) mapEntry(b []byte) (k, v string, ok bool) {
	ok = eachBytes(b, func(num protowire.Number, raw []byte) (ok bool) {
		switch num {
		case 1:
			k, ok = d.str(raw)
		case 2:
			v, ok = d.str(raw)
		}
		return ok
	})
	return k, v, ok
}

// typedValue decodes a TypedValue holding one scalar, bytes or JSON value.
func (d *Decoder) typedValue(b []byte) (*gnmi.TypedValue, bool) {
	tv := d.tvs.next()
	tv.Reset()
	if len(b) == 0 {
		return tv, true
	}
	num, typ, rest, ok := field(b)
	if !ok {
		return nil, false
	}
	var n int
	vs := &d.vals
	switch typ {
	case protowire.VarintType:
		var v uint64
		if v, n = protowire.ConsumeVarint(rest); n < 0 {
			return nil, false
		}
		switch num {
		case 2:
			w := vs.i.next()
			w.IntVal = int64(v)
			tv.Value = w
		case 3:
			w := vs.u.next()
			w.UintVal = v
			tv.Value = w
		case 4:
			w := vs.b.next()
			w.BoolVal = v != 0
			tv.Value = w
		default:
			return nil, false
		}
	case protowire.Fixed64Type:
		var v uint64
		if v, n = protowire.ConsumeFixed64(rest); n < 0 || num != 14 {
			return nil, false
		}
		w := vs.f64.next()
		w.DoubleVal = math.Float64frombits(v)
		tv.Value = w
	case protowire.Fixed32Type:
		var v uint32
		if v, n = protowire.ConsumeFixed32(rest); n < 0 || num != 6 {
			return nil, false
		}
		w := vs.f32.next()
		w.FloatVal = math.Float32frombits(v)
		tv.Value = w
	case protowire.BytesType:
		var v []byte
		if v, n = protowire.ConsumeBytes(rest); n < 0 {
			return nil, false
		}
		switch num {
		case 1, 12:
			s, ok := d.str(v)
			if !ok {
				return nil, false
			}
			if num == 1 {
				w := vs.str.next()
				w.StringVal = s
				tv.Value = w
			} else {
				w := vs.ascii.next()
				w.AsciiVal = s
				tv.Value = w
			}
		case 5:
			w := vs.bytes.next()
			w.BytesVal = d.bytes(v)
			tv.Value = w
		case 10:
			w := vs.json.next()
			w.JsonVal = d.bytes(v)
			tv.Value = w
		case 11:
			w := vs.ietf.next()
			w.JsonIetfVal = d.bytes(v)
			tv.Value = w
		case 13:
			w := vs.pbytes.next()
			w.ProtoBytes = d.bytes(v)
			tv.Value = w
		default:
			return nil, false
		}
	default:
		return nil, false
	}
	if len(rest) != n {
		return nil, false // a second value: the last wins, proto's job
	}
	return tv, true
}

// str returns v as a string (proto3 strings must be valid UTF-8).
func (d *Decoder) str(v []byte) (string, bool) {
	if len(v) > internMaxBytes {
		if !utf8.Valid(v) {
			return "", false
		}
		return string(v), true
	}
	if s, ok := d.intern[string(v)]; ok {
		return s, true
	}
	if !utf8.Valid(v) {
		return "", false
	}
	if len(d.intern) >= internMaxEntries {
		clear(d.intern)
	}
	s := string(v)
	d.intern[s] = s
	return s, true
}

// bytes copies v into the response's arena: the receive buffer is the
// transport's, reused after the decode.
func (d *Decoder) bytes(v []byte) []byte {
	start := len(d.arena)
	d.arena = append(d.arena, v...)
	return d.arena[start:len(d.arena):len(d.arena)]
}
