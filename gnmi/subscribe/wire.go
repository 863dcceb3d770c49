package subscribe

import (
	"math"
	"slices"
	"unicode/utf8"

	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The wire form of a SubscribeResponse carrying a notification, written
// directly instead of through protobuf's reflective marshaller: this is the
// hot path of every STREAM and SAMPLE, and the shapes are few and fixed.
// rawResponse hands the bytes to gRPC as the unknown fields of an empty
// SubscribeResponse, which the proto codec copies as they are; the receiver
// decodes an ordinary SubscribeResponse. Only for the proto codec: another
// codec would not see unknown fields. The bytes are what deterministic
// proto.Marshal writes for the message notifications builds (tested), and a
// string that is not valid UTF-8 fails here as it would in proto.Marshal.

// Field numbers (gnmi.proto).
const (
	fResponseUpdate = 1 // SubscribeResponse.update

	fNotifTimestamp = 1
	fNotifPrefix    = 2
	fNotifUpdate    = 4
	fNotifDelete    = 5
	fNotifAtomic    = 6

	fPathElement = 1
	fPathOrigin  = 2
	fPathElem    = 3
	fPathTarget  = 4

	fElemName = 1
	fElemKey  = 2

	fUpdatePath       = 1
	fUpdateVal        = 3
	fUpdateDuplicates = 4

	fTVString   = 1
	fTVInt      = 2
	fTVUint     = 3
	fTVBool     = 4
	fTVJSON     = 10
	fTVJSONIETF = 11
	fTVDouble   = 14
)

// rawResponse wraps encoded SubscribeResponse fields as a message.
func rawResponse(b []byte) *gnmi.SubscribeResponse {
	r := &gnmi.SubscribeResponse{}
	r.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
	return r
}

func validPath(p *gnmi.Path) bool {
	if !utf8.ValidString(p.GetOrigin()) || !utf8.ValidString(p.GetTarget()) {
		return false
	}
	for _, e := range p.GetElem() {
		if !validElem(e) {
			return false
		}
	}
	return true
}

// sizeMsg is the size of an embedded message field of content size s (tags
// here are all one byte).
func sizeMsg(s int) int { return 1 + protowire.SizeVarint(uint64(s)) + s }

func sizeString(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func sizePath(p *gnmi.Path) int {
	s := sizeString(p.Origin) + sizeString(p.Target)
	for _, e := range p.Element {
		s += 1 + protowire.SizeBytes(len(e))
	}
	for _, e := range p.Elem {
		s += sizeMsg(sizeElem(e))
	}
	return s
}

func appendPathField(b []byte, num protowire.Number, p *gnmi.Path) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizePath(p)))
	for _, e := range p.Element {
		b = protowire.AppendTag(b, fPathElement, protowire.BytesType)
		b = protowire.AppendString(b, e)
	}
	b = appendString(b, fPathOrigin, p.Origin)
	for _, e := range p.Elem {
		b = protowire.AppendTag(b, fPathElem, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeElem(e)))
		b = appendElemBody(b, e)
	}
	return appendString(b, fPathTarget, p.Target)
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A map entry is a message {1: key, 2: value}; both are always written.
func sizeKey(k, v string) int {
	return 2 + protowire.SizeBytes(len(k)) + protowire.SizeBytes(len(v))
}

func appendKey(b []byte, k, v string) []byte {
	b = protowire.AppendTag(b, fElemKey, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeKey(k, v)))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, k)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func sizeElem(e *gnmi.PathElem) int {
	s := sizeString(e.Name)
	if len(e.Key) == 0 {
		return s
	}
	for k, v := range e.Key {
		s += sizeMsg(sizeKey(k, v))
	}
	return s
}

// sizeValue and appendValue write the scalar kinds telemetry uses directly
// and leave the others to protobuf.
func sizeValue(v *gnmi.TypedValue) int {
	switch x := v.Value.(type) {
	case *gnmi.TypedValue_UintVal:
		return 1 + protowire.SizeVarint(x.UintVal)
	case *gnmi.TypedValue_IntVal:
		return 1 + protowire.SizeVarint(uint64(x.IntVal))
	case *gnmi.TypedValue_StringVal:
		return 1 + protowire.SizeBytes(len(x.StringVal))
	case *gnmi.TypedValue_BoolVal:
		return 2
	case *gnmi.TypedValue_DoubleVal:
		return 1 + 8
	case *gnmi.TypedValue_JsonVal:
		return 1 + protowire.SizeBytes(len(x.JsonVal))
	case *gnmi.TypedValue_JsonIetfVal:
		return 1 + protowire.SizeBytes(len(x.JsonIetfVal))
	}
	return proto.Size(v)
}

func appendValue(b []byte, v *gnmi.TypedValue) ([]byte, error) {
	switch x := v.Value.(type) {
	case *gnmi.TypedValue_UintVal:
		b = protowire.AppendTag(b, fTVUint, protowire.VarintType)
		return protowire.AppendVarint(b, x.UintVal), nil
	case *gnmi.TypedValue_IntVal:
		b = protowire.AppendTag(b, fTVInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(x.IntVal)), nil
	case *gnmi.TypedValue_StringVal:
		b = protowire.AppendTag(b, fTVString, protowire.BytesType)
		return protowire.AppendString(b, x.StringVal), nil
	case *gnmi.TypedValue_BoolVal:
		b = protowire.AppendTag(b, fTVBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(x.BoolVal)), nil
	case *gnmi.TypedValue_DoubleVal:
		b = protowire.AppendTag(b, fTVDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(x.DoubleVal)), nil
	case *gnmi.TypedValue_JsonVal:
		b = protowire.AppendTag(b, fTVJSON, protowire.BytesType)
		return protowire.AppendBytes(b, x.JsonVal), nil
	case *gnmi.TypedValue_JsonIetfVal:
		b = protowire.AppendTag(b, fTVJSONIETF, protowire.BytesType)
		return protowire.AppendBytes(b, x.JsonIetfVal), nil
	}
	return proto.MarshalOptions{}.MarshalAppend(b, v)
}

// maxPrefixCache bounds a stream's cache of encoded prefixes (one per
// container it has sent from); a full cache is dropped and refilled.
const maxPrefixCache = 4096

// wireNotifications is notifications writing the wire form directly, without
// building the gnmi messages: emit gets one encoded SubscribeResponse (nil
// for a sync marker) and its number of updates and deletes. A notification's
// prefix is encoded once per container and kept.
func (st *stream) wireNotifications(items []entry, emit func(b []byte, updates int) error) error {
	for i := 0; i < len(items); {
		e := &items[i]
		if e.leaf == nil {
			if err := emit(nil, 0); err != nil {
				return err
			}
			i++
			continue
		}
		parent := e.leaf.Parent()
		j := i + 1
		for j < len(items) && j-i < st.maxBatch && items[j].leaf != nil && items[j].ts == e.ts && items[j].leaf.Parent() == parent {
			j++
		}
		b, err := st.appendRun(nil, items[i:j])
		if err != nil {
			return err
		}
		if err := emit(b, j-i); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// appendRun appends SubscribeResponse{update: Notification} for a run of
// entries that share a timestamp and a parent.
func (st *stream) appendRun(b []byte, run []entry) ([]byte, error) {
	prefix, err := st.prefixBytes(run[0].leaf)
	if err != nil {
		return b, err
	}
	vals := st.vals[:0]
	size := len(prefix)
	if ts := run[0].ts; ts != 0 {
		size += 1 + protowire.SizeVarint(uint64(ts))
	}
	for k := range run {
		e := &run[k]
		leaf := leafElem(e.leaf)
		if !validElem(leaf) {
			return b, invalidUTF8(e.leaf)
		}
		path := sizeMsg(sizeMsg(sizeElem(leaf)))
		if e.val == nil {
			size += path
			vals = append(vals, nil)
			continue
		}
		tv, err := st.enc.EncodeValue(e.leaf.Path(), e.val.TV)
		if err != nil {
			return b, status.Errorf(codes.Internal, "encoding %s: %v", e.leaf.Key(), err)
		}
		if s, ok := tv.GetValue().(*gnmi.TypedValue_StringVal); ok && !utf8.ValidString(s.StringVal) {
			return b, invalidUTF8(e.leaf)
		}
		vals = append(vals, tv)
		size += sizeMsg(sizeUpdateOf(path, tv, e.dups))
	}
	if cap(b)-len(b) < 1+protowire.SizeVarint(uint64(size))+size {
		b = slices.Grow(b, 1+protowire.SizeVarint(uint64(size))+size)
	}
	b = protowire.AppendTag(b, fResponseUpdate, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if ts := run[0].ts; ts != 0 {
		b = protowire.AppendTag(b, fNotifTimestamp, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(ts))
	}
	b = append(b, prefix...)
	for k := range run {
		e, tv := &run[k], vals[k]
		leaf := leafElem(e.leaf)
		if tv == nil {
			b = appendElemPath(b, fNotifDelete, leaf)
			continue
		}
		path := sizeMsg(sizeMsg(sizeElem(leaf)))
		b = protowire.AppendTag(b, fNotifUpdate, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeUpdateOf(path, tv, e.dups)))
		b = appendElemPath(b, fUpdatePath, leaf)
		b = protowire.AppendTag(b, fUpdateVal, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeValue(tv)))
		if b, err = appendValue(b, tv); err != nil {
			return b, err
		}
		if e.dups != 0 {
			b = protowire.AppendTag(b, fUpdateDuplicates, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(e.dups))
		}
	}
	clear(vals)
	st.vals = vals[:0]
	return b, nil
}

func invalidUTF8(l *store.Node) error {
	return status.Errorf(codes.Internal, "encoding %s: string field contains invalid UTF-8", l.Key())
}

func leafElem(l *store.Node) *gnmi.PathElem {
	el := l.Path().GetElem()
	return el[len(el)-1]
}

// sizeUpdateOf is the size of Update{path, val, duplicates} given the size of
// its path field.
func sizeUpdateOf(pathField int, tv *gnmi.TypedValue, dups uint32) int {
	s := pathField + sizeMsg(sizeValue(tv))
	if dups != 0 {
		s += 1 + protowire.SizeVarint(uint64(dups))
	}
	return s
}

// appendElemPath appends a Path field holding the single element e.
func appendElemPath(b []byte, num protowire.Number, e *gnmi.PathElem) []byte {
	es := sizeElem(e)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeMsg(es)))
	b = protowire.AppendTag(b, fPathElem, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(es))
	return appendElemBody(b, e)
}

func appendElemBody(b []byte, e *gnmi.PathElem) []byte {
	b = appendString(b, fElemName, e.Name)
	switch len(e.Key) {
	case 0:
		return b
	case 1:
		for k, v := range e.Key {
			b = appendKey(b, k, v)
		}
		return b
	}
	for _, k := range slices.Sorted(mapKeys(e.Key)) {
		b = appendKey(b, k, e.Key[k])
	}
	return b
}

func validElem(e *gnmi.PathElem) bool {
	if !utf8.ValidString(e.Name) {
		return false
	}
	if len(e.Key) == 0 {
		return true
	}
	for k, v := range e.Key {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// prefixBytes returns the encoded prefix field of the notifications of leaf's
// container: its path with the request's target and origin (nothing when
// all three are empty, as notifications does).
func (st *stream) prefixBytes(leaf *store.Node) ([]byte, error) {
	parent := leaf.Parent()
	if b, ok := st.prefixes[parent]; ok {
		return b, nil
	}
	full := leaf.Path().GetElem()
	p := &gnmi.Path{Target: st.bare.GetTarget(), Origin: st.bare.GetOrigin(), Elem: full[:len(full)-1]}
	var b []byte
	if len(p.Elem) > 0 || st.bare != nil {
		if !validPath(p) {
			return nil, invalidUTF8(leaf)
		}
		b = appendPathField(make([]byte, 0, sizeMsg(sizePath(p))), fNotifPrefix, p)
	}
	if len(st.prefixes) >= maxPrefixCache || st.prefixes == nil {
		st.prefixes = make(map[*store.Node][]byte)
	}
	st.prefixes[parent] = b
	return b, nil
}
