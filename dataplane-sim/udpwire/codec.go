package udpwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// Geneve constants (RFC 8926).
const (
	// GenevePort is Geneve's IANA UDP port: tshark dissects it by default;
	// wires on other ports need `-d udp.port==PORT,geneve`.
	GenevePort = 6081
	// ProtoEthernet is the Geneve protocol type of an Ethernet payload
	// (Transparent Ethernet Bridging); ProtoKeepalive that of a keepalive,
	// which has no payload (IEEE 802 Local Experimental EtherType 1, so
	// that tshark does not look for a frame in it).
	ProtoEthernet  = 0x6558
	ProtoKeepalive = 0x88B5
	// OptionClass is the Geneve option class of our options, from the
	// range IANA keeps for experimental use (0xFFF0-0xFFFF).
	OptionClass = 0xFFF0
	// OptionMeta and OptionHello are our option types.
	OptionMeta  = 0x01
	OptionHello = 0x02

	genevelen = 8
	optHdrLen = 4
	metaLen   = 32
	helloLen  = 40
	// MaxVNI is the largest Geneve VNI (24 bits).
	MaxVNI = 1<<24 - 1
	// DataOverhead is what a data datagram adds in front of the frame.
	DataOverhead = genevelen + optHdrLen + metaLen
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("udpwire: malformed datagram")

// Meta is what the simulator knows of a frame beyond its bytes.
type Meta struct {
	// SentAt is when the frame's last bit left the transmitter, in the
	// sender's simulated time (which the fabric keeps equal to ours).
	SentAt engine.Time
	// Seq numbers the data frames of one direction of a wire, from 1:
	// gaps are datagrams lost on the way.
	Seq uint32
	// SizeBytes and PayloadBytes are the model's frame size (Ethernet
	// header to FCS) and RDMA payload; the model counts IPv4 headers even
	// for IPv6 frames, so they are carried rather than recomputed.
	SizeBytes, PayloadBytes int32
	// Flow is the netsim flow number (both processes build the same
	// scenario), or -1; SrcQP the sender's QP number (metadata in netsim
	// too: a BTH names only the destination QP).
	Flow  int32
	SrcQP uint32
	// Kind is the netsim.Kind, Prio the 802.1p priority, HdrLen the
	// length of the transport header bytes the model reads (BTH, DETH,
	// Long-haul CNP body...), taken from the frame after its IP (and UDP)
	// header.
	Kind, Prio, HdrLen uint8
	// ModelFrame says the frame is the model's own (a CM MAD, a Long-haul
	// CNP: netsim.Packet.Frame), to be kept with the packet.
	ModelFrame bool
}

// Hello is a keepalive's content.
type Hello struct {
	// Epoch is the wall-clock time of the sender's simulated time 0, in
	// Unix nanoseconds; Speed its simulated seconds per wall second.
	Epoch int64
	Speed float64
	// Now is the sender's simulated time when it sent the hello.
	Now engine.Time
	// Instance changes each time the sender's process starts; Heard is
	// the instance of the peer the sender hears (0: none yet). A link is
	// up when each side hears the other.
	Instance, Heard uint64
}

// Datagram is a decoded datagram. Frame points into the decoded buffer.
type Datagram struct {
	VNI     uint32
	Control bool // a keepalive: Hello is set, Frame and Meta are not
	Meta    Meta
	Hello   Hello
	Frame   []byte
}

func putHeader(b []byte, optWords int, control bool, vni uint32) {
	b[0] = byte(optWords) // version 0
	b[1] = 0
	proto := uint16(ProtoEthernet)
	if control {
		b[1] = 0x80
		proto = ProtoKeepalive
	}
	binary.BigEndian.PutUint16(b[2:], proto)
	binary.BigEndian.PutUint32(b[4:], vni<<8)
}

func putOption(b []byte, typ uint8, dataLen int) {
	binary.BigEndian.PutUint16(b[0:], OptionClass)
	b[2] = typ
	b[3] = byte(dataLen / 4)
}

// AppendData appends a data datagram: the Geneve header, the meta option
// and frame.
func AppendData(dst []byte, vni uint32, m *Meta, frame []byte) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, DataOverhead)...)
	b := dst[n:]
	putHeader(b, (optHdrLen+metaLen)/4, false, vni)
	putOption(b[genevelen:], OptionMeta, metaLen)
	o := b[genevelen+optHdrLen:]
	binary.BigEndian.PutUint64(o[0:], uint64(m.SentAt))
	binary.BigEndian.PutUint32(o[8:], m.Seq)
	binary.BigEndian.PutUint32(o[12:], uint32(m.SizeBytes))
	binary.BigEndian.PutUint32(o[16:], uint32(m.PayloadBytes))
	binary.BigEndian.PutUint32(o[20:], uint32(m.Flow))
	binary.BigEndian.PutUint32(o[24:], m.SrcQP)
	o[28], o[29], o[30] = m.Kind, m.Prio, m.HdrLen
	if m.ModelFrame {
		o[31] = 1
	}
	return append(dst, frame...)
}

// AppendHello appends a keepalive datagram.
func AppendHello(dst []byte, vni uint32, h *Hello) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, genevelen+optHdrLen+helloLen)...)
	b := dst[n:]
	putHeader(b, (optHdrLen+helloLen)/4, true, vni)
	putOption(b[genevelen:], OptionHello, helloLen)
	o := b[genevelen+optHdrLen:]
	binary.BigEndian.PutUint64(o[0:], uint64(h.Epoch))
	binary.BigEndian.PutUint64(o[8:], math.Float64bits(h.Speed))
	binary.BigEndian.PutUint64(o[16:], uint64(h.Now))
	binary.BigEndian.PutUint64(o[24:], h.Instance)
	binary.BigEndian.PutUint64(o[32:], h.Heard)
	return dst
}

// Decode reads a datagram. Options of other classes or types are skipped
// (Geneve's rule for non-critical options); a critical option we do not
// know, a missing meta or hello option, or a bad length is an error
// wrapping ErrMalformed.
func Decode(b []byte, d *Datagram) error {
	*d = Datagram{}
	if len(b) < genevelen {
		return fmt.Errorf("%w: %d bytes, shorter than a geneve header", ErrMalformed, len(b))
	}
	if v := b[0] >> 6; v != 0 {
		return fmt.Errorf("%w: geneve version %d", ErrMalformed, v)
	}
	optLen := int(b[0]&0x3F) * 4
	d.Control = b[1]&0x80 != 0
	want := uint16(ProtoEthernet)
	if d.Control {
		want = ProtoKeepalive
	}
	if pt := binary.BigEndian.Uint16(b[2:]); pt != want {
		return fmt.Errorf("%w: geneve protocol type %#04x, want %#04x", ErrMalformed, pt, want)
	}
	d.VNI = binary.BigEndian.Uint32(b[4:]) >> 8
	if len(b) < genevelen+optLen {
		return fmt.Errorf("%w: %d bytes of geneve options announced, %d present", ErrMalformed, optLen, len(b)-genevelen)
	}
	opts := b[genevelen : genevelen+optLen]
	var haveMeta, haveHello bool
	for len(opts) > 0 {
		if len(opts) < optHdrLen {
			return fmt.Errorf("%w: truncated geneve option header", ErrMalformed)
		}
		class, typ, n := binary.BigEndian.Uint16(opts), opts[2], int(opts[3]&0x1F)*4
		if len(opts) < optHdrLen+n {
			return fmt.Errorf("%w: geneve option of %d bytes, %d left", ErrMalformed, n, len(opts)-optHdrLen)
		}
		o := opts[optHdrLen : optHdrLen+n]
		opts = opts[optHdrLen+n:]
		switch {
		case class == OptionClass && typ == OptionMeta && n == metaLen:
			haveMeta = true
			m := &d.Meta
			m.SentAt = engine.Time(binary.BigEndian.Uint64(o[0:]))
			m.Seq = binary.BigEndian.Uint32(o[8:])
			m.SizeBytes = int32(binary.BigEndian.Uint32(o[12:]))
			m.PayloadBytes = int32(binary.BigEndian.Uint32(o[16:]))
			m.Flow = int32(binary.BigEndian.Uint32(o[20:]))
			m.SrcQP = binary.BigEndian.Uint32(o[24:])
			m.Kind, m.Prio, m.HdrLen, m.ModelFrame = o[28], o[29], o[30], o[31]&1 != 0
		case class == OptionClass && typ == OptionHello && n == helloLen:
			haveHello = true
			h := &d.Hello
			h.Epoch = int64(binary.BigEndian.Uint64(o[0:]))
			h.Speed = math.Float64frombits(binary.BigEndian.Uint64(o[8:]))
			h.Now = engine.Time(binary.BigEndian.Uint64(o[16:]))
			h.Instance = binary.BigEndian.Uint64(o[24:])
			h.Heard = binary.BigEndian.Uint64(o[32:])
		case typ&0x80 != 0:
			return fmt.Errorf("%w: unknown critical geneve option class %#04x type %#02x", ErrMalformed, class, typ)
		}
	}
	if d.Control {
		if !haveHello {
			return fmt.Errorf("%w: control packet without a hello option", ErrMalformed)
		}
		if !(d.Hello.Speed > 0) || math.IsInf(d.Hello.Speed, 0) {
			return fmt.Errorf("%w: hello with speed %g", ErrMalformed, d.Hello.Speed)
		}
		return nil
	}
	if !haveMeta {
		return fmt.Errorf("%w: data packet without a meta option", ErrMalformed)
	}
	d.Frame = b[genevelen+optLen:]
	return nil
}
