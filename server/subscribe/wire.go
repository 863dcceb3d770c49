package subscribe

import (
	"errors"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/openconfig/gnmi/proto/gnmi"
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
// codec would not see unknown fields.

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

// response returns the message that sends n: the raw wire form when raw,
// else (or if that fails, so that gRPC reports the error as it always has)
// the ordinary message.
func response(n *gnmi.Notification, raw bool) *gnmi.SubscribeResponse {
	if raw {
		size := sizeNotification(n)
		if b, err := appendResponse(make([]byte, 0, 1+protowire.SizeVarint(uint64(size))+size), n); err == nil {
			return rawResponse(b)
		}
	}
	return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}
}

// appendResponse appends the wire form of SubscribeResponse{update: n}. It
// fails where proto.Marshal would: a string that is not valid UTF-8, or a
// value protobuf cannot marshal.
func appendResponse(b []byte, n *gnmi.Notification) ([]byte, error) {
	if !validUTF8(n) {
		return b, errInvalidUTF8
	}
	b = protowire.AppendTag(b, fResponseUpdate, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeNotification(n)))
	return appendNotification(b, n)
}

var errInvalidUTF8 = errors.New("string field contains invalid UTF-8")

func validUTF8(n *gnmi.Notification) bool {
	validPath := func(p *gnmi.Path) bool {
		if !utf8.ValidString(p.GetOrigin()) || !utf8.ValidString(p.GetTarget()) {
			return false
		}
		for _, e := range p.GetElement() {
			if !utf8.ValidString(e) {
				return false
			}
		}
		for _, e := range p.GetElem() {
			if !utf8.ValidString(e.Name) {
				return false
			}
			for k, v := range e.Key {
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					return false
				}
			}
		}
		return true
	}
	if !validPath(n.Prefix) {
		return false
	}
	for _, u := range n.Update {
		if !validPath(u.Path) {
			return false
		}
		if s, ok := u.Val.GetValue().(*gnmi.TypedValue_StringVal); ok && !utf8.ValidString(s.StringVal) {
			return false
		}
	}
	for _, p := range n.Delete {
		if !validPath(p) {
			return false
		}
	}
	return true
}

func sizeNotification(n *gnmi.Notification) int {
	s := 0
	if n.Timestamp != 0 {
		s += 1 + protowire.SizeVarint(uint64(n.Timestamp))
	}
	if n.Prefix != nil {
		s += sizeMsg(sizePath(n.Prefix))
	}
	for _, u := range n.Update {
		s += sizeMsg(sizeUpdate(u))
	}
	for _, p := range n.Delete {
		s += sizeMsg(sizePath(p))
	}
	if n.Atomic {
		s += 2
	}
	return s
}

func appendNotification(b []byte, n *gnmi.Notification) ([]byte, error) {
	if n.Timestamp != 0 {
		b = protowire.AppendTag(b, fNotifTimestamp, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(n.Timestamp))
	}
	if n.Prefix != nil {
		b = appendPathField(b, fNotifPrefix, n.Prefix)
	}
	for _, u := range n.Update {
		b = protowire.AppendTag(b, fNotifUpdate, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeUpdate(u)))
		if u.Path != nil {
			b = appendPathField(b, fUpdatePath, u.Path)
		}
		if u.Val != nil {
			b = protowire.AppendTag(b, fUpdateVal, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(sizeValue(u.Val)))
			var err error
			if b, err = appendValue(b, u.Val); err != nil {
				return b, err
			}
		}
		if u.Duplicates != 0 {
			b = protowire.AppendTag(b, fUpdateDuplicates, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(u.Duplicates))
		}
	}
	for _, p := range n.Delete {
		b = appendPathField(b, fNotifDelete, p)
	}
	if n.Atomic {
		b = protowire.AppendTag(b, fNotifAtomic, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b, nil
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

func sizeUpdate(u *gnmi.Update) int {
	s := 0
	if u.Path != nil {
		s += sizeMsg(sizePath(u.Path))
	}
	if u.Val != nil {
		s += sizeMsg(sizeValue(u.Val))
	}
	if u.Duplicates != 0 {
		s += 1 + protowire.SizeVarint(uint64(u.Duplicates))
	}
	return s
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
		b = appendString(b, fElemName, e.Name)
		if len(e.Key) == 1 {
			for k, v := range e.Key {
				b = appendKey(b, k, v)
			}
			continue
		}
		for _, k := range slices.Sorted(mapKeys(e.Key)) {
			b = appendKey(b, k, e.Key[k])
		}
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
