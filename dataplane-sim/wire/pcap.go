package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// A minimal classic pcap writer and reader (the libpcap file format,
// draft-ietf-opsawg-pcap), enough for the simulator to write what it sends
// and for `lhcnp decode` to read it back or read a tshark capture. Only
// LINKTYPE_ETHERNET is written; the reader accepts any link type and reports
// it. pcapng is not supported.

// Pcap constants.
const (
	pcapMagicMicro = 0xa1b2c3d4
	pcapMagicNano  = 0xa1b23c4d
	pcapHeaderLen  = 24
	pcapRecordLen  = 16
	// LinkTypeEthernet is LINKTYPE_ETHERNET.
	LinkTypeEthernet = 1
	// DefaultSnapLen is the snapshot length PcapWriter declares.
	DefaultSnapLen = 262144
	// maxPcapRecord bounds what a file's header can make the reader allocate.
	maxPcapRecord = 1 << 24
)

// PcapWriter writes a classic pcap file of Ethernet frames.
type PcapWriter struct {
	w    io.Writer
	nano bool
	hdr  [pcapRecordLen]byte
}

// NewPcapWriter writes the file header to w and returns a writer. nano
// selects nanosecond timestamps (tshark reads both); the simulator's clock
// is in nanoseconds.
func NewPcapWriter(w io.Writer, nano bool) (*PcapWriter, error) {
	var h [pcapHeaderLen]byte
	magic := uint32(pcapMagicMicro)
	if nano {
		magic = pcapMagicNano
	}
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint16(h[4:], 2) // version 2.4
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], DefaultSnapLen)
	binary.LittleEndian.PutUint32(h[20:], LinkTypeEthernet)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("pcap: write header: %w", err)
	}
	return &PcapWriter{w: w, nano: nano}, nil
}

// WritePacket writes one frame with timestamp ts.
func (p *PcapWriter) WritePacket(ts time.Time, frame []byte) error {
	if len(frame) > DefaultSnapLen {
		return fmt.Errorf("pcap: frame of %d bytes exceeds the snap length %d: %w", len(frame), DefaultSnapLen, ErrInvalid)
	}
	sub := uint32(ts.Nanosecond())
	if !p.nano {
		sub /= 1000
	}
	binary.LittleEndian.PutUint32(p.hdr[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(p.hdr[4:], sub)
	binary.LittleEndian.PutUint32(p.hdr[8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(p.hdr[12:], uint32(len(frame)))
	if _, err := p.w.Write(p.hdr[:]); err != nil {
		return fmt.Errorf("pcap: write record header: %w", err)
	}
	if _, err := p.w.Write(frame); err != nil {
		return fmt.Errorf("pcap: write record: %w", err)
	}
	return nil
}

// PcapReader reads a classic pcap file, either byte order, microsecond or
// nanosecond timestamps.
type PcapReader struct {
	r        io.Reader
	order    binary.ByteOrder
	nano     bool
	snapLen  uint32
	linkType uint32
	hdr      [pcapRecordLen]byte
	buf      []byte
}

// NewPcapReader reads the file header from r.
func NewPcapReader(r io.Reader) (*PcapReader, error) {
	var h [pcapHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("pcap: file header: %w", noEOF(err))
	}
	p := &PcapReader{r: r}
	switch magic := binary.LittleEndian.Uint32(h[0:]); magic {
	case pcapMagicMicro:
		p.order = binary.LittleEndian
	case pcapMagicNano:
		p.order, p.nano = binary.LittleEndian, true
	default:
		switch binary.BigEndian.Uint32(h[0:]) {
		case pcapMagicMicro:
			p.order = binary.BigEndian
		case pcapMagicNano:
			p.order, p.nano = binary.BigEndian, true
		default:
			return nil, fmt.Errorf("pcap: magic %#08x is not classic pcap: %w", magic, ErrUnsupported)
		}
	}
	p.snapLen = p.order.Uint32(h[16:])
	p.linkType = p.order.Uint32(h[20:]) & 0x0FFFFFFF // upper bits: FCS length flags
	return p, nil
}

// LinkType returns the file's link type (LinkTypeEthernet for ours).
func (p *PcapReader) LinkType() uint32 { return p.linkType }

// Next returns the next frame, its timestamp and its original length. The
// frame is valid until the next call. At the end of the file it returns
// io.EOF; a record cut short returns an error wrapping ErrTruncated.
func (p *PcapReader) Next() (frame []byte, ts time.Time, origLen int, err error) {
	if _, err := io.ReadFull(p.r, p.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, time.Time{}, 0, io.EOF
		}
		return nil, time.Time{}, 0, fmt.Errorf("pcap: record header: %w", noEOF(err))
	}
	sec := p.order.Uint32(p.hdr[0:])
	sub := p.order.Uint32(p.hdr[4:])
	capLen := p.order.Uint32(p.hdr[8:])
	origLen = int(p.order.Uint32(p.hdr[12:]))
	if (capLen > DefaultSnapLen && capLen > p.snapLen) || capLen > maxPcapRecord {
		return nil, time.Time{}, 0, fmt.Errorf("pcap: record of %d bytes exceeds the snap length: %w", capLen, ErrLength)
	}
	if cap(p.buf) < int(capLen) {
		p.buf = make([]byte, capLen)
	}
	p.buf = p.buf[:capLen]
	if _, err := io.ReadFull(p.r, p.buf); err != nil {
		return nil, time.Time{}, 0, fmt.Errorf("pcap: record of %d bytes: %w", capLen, noEOF(err))
	}
	nsec := int64(sub)
	if !p.nano {
		nsec *= 1000
	}
	return p.buf, time.Unix(int64(sec), nsec), origLen, nil
}

// noEOF turns an EOF in the middle of a structure into ErrTruncated.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrTruncated, err)
	}
	return err
}
