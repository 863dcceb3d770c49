package rows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// codecVersion is the first byte of an encoded batch.
const codecVersion = 1

// ErrCorrupt is returned by DecodeBatch for bytes that are not a batch.
var ErrCorrupt = errors.New("rows: corrupt batch encoding")

// AppendBatch appends the binary form of b (the spill's record payload):
// a version byte, then varints and length-prefixed strings.
func AppendBatch(dst []byte, b *Batch) []byte {
	dst = append(dst, codecVersion)
	dst = binary.AppendVarint(dst, b.ID)
	dst = appendString(dst, b.Collector)
	dst = appendString(dst, b.Target)
	dst = binary.AppendVarint(dst, b.Epoch)
	dst = binary.AppendUvarint(dst, uint64(len(b.Series)))
	for i := range b.Series {
		s := &b.Series[i]
		dst = binary.AppendVarint(dst, s.ID)
		dst = appendString(dst, s.Target)
		dst = appendString(dst, s.Path)
		dst = appendString(dst, s.SchemaPath)
		dst = binary.AppendUvarint(dst, uint64(len(s.Keys)))
		for _, k := range s.Keys {
			dst = appendString(dst, k.Name)
			dst = appendString(dst, k.Value)
		}
		dst = appendString(dst, s.YangType)
		dst = appendString(dst, s.Unit)
		dst = binary.AppendVarint(dst, s.FirstSeen)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.Samples)))
	for i := range b.Samples {
		s := &b.Samples[i]
		dst = binary.AppendVarint(dst, s.TS)
		dst = binary.AppendVarint(dst, s.SeriesID)
		dst = append(dst, byte(s.Kind))
		dst = binary.AppendVarint(dst, int64(s.Flags))
		switch s.Kind {
		case ValInt, ValBool:
			dst = binary.AppendVarint(dst, s.Int)
		case ValFloat:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.Float))
		case ValNum, ValText:
			dst = appendString(dst, s.Text)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.Events)))
	for i := range b.Events {
		e := &b.Events[i]
		dst = binary.AppendVarint(dst, e.TS)
		for _, s := range []string{e.Target, e.Kind, e.Interface, e.Action, e.SourceAddress, e.DestinationAddress, e.Details} {
			dst = appendString(dst, s)
		}
		for _, v := range []int64{e.Queue, e.Parameter, e.CongestionLevel, e.SourceQP, e.DestinationQP} {
			dst = binary.AppendVarint(dst, v)
		}
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads the encoding; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length and checks that at least minBytes per element
// remain, so a corrupt length cannot make us allocate gigabytes.
func (d *decoder) count(minBytes int) int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad length")
		return 0
	}
	d.b = d.b[n:]
	if v > uint64(len(d.b)/minBytes) {
		d.fail("length past the end")
		return 0
	}
	return int(v)
}

func (d *decoder) str() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("short")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// DecodeBatch decodes what AppendBatch wrote. Malformed input gives an error
// wrapping ErrCorrupt, never a panic.
func DecodeBatch(data []byte) (*Batch, error) {
	d := &decoder{b: data}
	if v := d.byte1(); d.err == nil && v != codecVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorrupt, v)
	}
	b := &Batch{ID: d.varint(), Collector: d.str(), Target: d.str(), Epoch: d.varint()}
	if n := d.count(8); n > 0 {
		b.Series = make([]Series, n)
		for i := range b.Series {
			s := &b.Series[i]
			s.ID, s.Target, s.Path, s.SchemaPath = d.varint(), d.str(), d.str(), d.str()
			if k := d.count(2); k > 0 {
				s.Keys = make([]Key, k)
				for j := range s.Keys {
					s.Keys[j] = Key{Name: d.str(), Value: d.str()}
				}
			}
			s.YangType, s.Unit, s.FirstSeen = d.str(), d.str(), d.varint()
		}
	}
	if n := d.count(4); n > 0 {
		b.Samples = make([]Sample, n)
		for i := range b.Samples {
			s := &b.Samples[i]
			s.TS, s.SeriesID = d.varint(), d.varint()
			s.Kind = ValueKind(d.byte1())
			s.Flags = Flags(d.varint())
			switch s.Kind {
			case ValNone:
			case ValInt, ValBool:
				s.Int = d.varint()
			case ValFloat:
				if d.err == nil && len(d.b) < 8 {
					d.fail("short float")
				}
				if d.err == nil {
					s.Float = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
					d.b = d.b[8:]
				}
			case ValNum, ValText:
				s.Text = d.str()
			default:
				d.fail("bad value kind")
			}
			if d.err != nil {
				return nil, d.err
			}
		}
	}
	if n := d.count(13); n > 0 {
		b.Events = make([]Event, n)
		for i := range b.Events {
			e := &b.Events[i]
			e.TS = d.varint()
			for _, s := range []*string{&e.Target, &e.Kind, &e.Interface, &e.Action, &e.SourceAddress, &e.DestinationAddress, &e.Details} {
				*s = d.str()
			}
			for _, v := range []*int64{&e.Queue, &e.Parameter, &e.CongestionLevel, &e.SourceQP, &e.DestinationQP} {
				*v = d.varint()
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return b, nil
}
