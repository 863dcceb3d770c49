package wire

import "errors"

// Sentinel errors. Decoders wrap them with context (layer, offset, values),
// so callers test with errors.Is.
var (
	// ErrTruncated: the input ends before a header or a length field says it should.
	ErrTruncated = errors.New("truncated")
	// ErrShortBuffer: an encoder was given a buffer too small for the frame.
	ErrShortBuffer = errors.New("buffer too short")
	// ErrChecksum: an IPv4 header, UDP or ICMPv6 checksum does not verify.
	ErrChecksum = errors.New("bad checksum")
	// ErrICRC: the RoCEv2 invariant CRC does not verify.
	ErrICRC = errors.New("bad icrc")
	// ErrExtVersion: an RFC 4884 extension header has a version other than 2.
	ErrExtVersion = errors.New("bad extension version")
	// ErrExtChecksum: an RFC 4884 extension header checksum does not verify.
	ErrExtChecksum = errors.New("bad extension checksum")
	// ErrObjectLength: an extension object's length is below its header size or
	// runs past the end of the message.
	ErrObjectLength = errors.New("bad extension object length")
	// ErrLength: a length field disagrees with the bytes present or with the format.
	ErrLength = errors.New("bad length")
	// ErrUnsupported: a protocol, opcode, type or version this package does not parse.
	ErrUnsupported = errors.New("unsupported")
	// ErrInvalid: a field holds a value its format forbids (for example a
	// percentage above 100 on encode).
	ErrInvalid = errors.New("invalid field value")
)
