package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// specHex decodes a hex literal, ignoring spaces, newlines and '|' separators.
func specHex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex literal: %v", err)
	}
	return b
}

var destOptsDst = netip.MustParseAddr("2001:db8::2").As16()

func TestDestOptsGolden(t *testing.T) {
	cp := DefaultCodePoints()
	tests := []struct {
		desc string
		opt  FastCNPOption
		want string // hand-written from RFC 8200 §4.3/§4.6 and the draft's figures
	}{{
		desc: "plain: PadN(2) then option at 8n+6, address at offset 8",
		opt:  FastCNPOption{OrigDst: destOptsDst},
		want: "11 02 | 01 02 0000 | 9e 10 | 20010db8 00000000 00000000 00000002",
	}, {
		desc: "ioam, no trace data: PadN(0), address at 8",
		opt:  FastCNPOption{OrigDst: destOptsDst, IOAM: true, IOAMOptType: 0, IOAMData: []byte{}},
		want: "11 02 | 01 00 | 9d 12 00 00 | 20010db8 00000000 00000000 00000002",
	}, {
		desc: "ioam, 8 octets of trace data: data at 8, address at 16",
		opt: FastCNPOption{OrigDst: destOptsDst, IOAM: true, IOAMOptType: 1,
			IOAMData: specHex(t, "0001 0800 f00000 00")},
		want: "11 03 | 01 00 | 9d 1a 00 01 | 0001 0800 f00000 00 | 20010db8 00000000 00000000 00000002",
	}, {
		desc: "ioam, 4 octets of trace data: PadN(4), data at 12, address at 16",
		opt: FastCNPOption{OrigDst: destOptsDst, IOAM: true, IOAMOptType: 0,
			IOAMData: specHex(t, "deadbeef")},
		want: "11 03 | 01 04 00000000 | 9d 16 00 00 | deadbeef | 20010db8 00000000 00000000 00000002",
	}, {
		desc: "ioam, 1 octet of data: Pad1",
		opt: FastCNPOption{OrigDst: destOptsDst, IOAM: true, IOAMOptType: 0,
			IOAMData: []byte{0x77}},
		want: "11 02 | 00 | 9d 13 00 00 | 77 | 20010db8 00000000 00000000 00000002",
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			want := specHex(t, tt.want)
			if got := tt.opt.DestOptsLen(); got != len(want) {
				t.Errorf("DestOptsLen() = %d, want %d", got, len(want))
			}
			b := bytes.Repeat([]byte{0xEE}, len(want)+5)
			n, err := tt.opt.EncodeDestOpts(b, 17, &cp)
			if err != nil {
				t.Fatalf("EncodeDestOpts: %v", err)
			}
			if diff := cmp.Diff(want, b[:n]); diff != "" {
				t.Errorf("EncodeDestOpts bytes (-want, +got):\n%s", diff)
			}
			if b[n] != 0xEE {
				t.Errorf("EncodeDestOpts wrote past its length")
			}
			// The address is 8-octet aligned and ends the header.
			if !bytes.Equal(b[n-16:n], destOptsDst[:]) || (n-16)%8 != 0 {
				t.Errorf("address not at an 8-aligned offset at the end")
			}
			got, nh, hl, err := DecodeDestOpts(want, &cp)
			if err != nil {
				t.Fatalf("DecodeDestOpts: %v", err)
			}
			if nh != 17 || hl != len(want) {
				t.Errorf("DecodeDestOpts next header, length = %d, %d; want 17, %d", nh, hl, len(want))
			}
			if diff := cmp.Diff(tt.opt, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DecodeDestOpts (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestDestOptsDecodeOtherLayouts(t *testing.T) {
	cp := DefaultCodePoints()
	plain := FastCNPOption{OrigDst: destOptsDst}
	tests := []struct {
		desc  string
		in    string
		cp    *CodePoints // nil: the defaults, unless nilCP
		nilCP bool
		want  FastCNPOption
		len   int
	}{{
		desc: "option first, trailing PadN",
		in:   "3a 02 | 9e 10 20010db8 00000000 00000000 00000002 | 01 02 0000",
		want: plain, len: 24,
	}, {
		desc: "option first, trailing Pad1s",
		in:   "3a 02 | 9e 10 20010db8 00000000 00000000 00000002 | 00 00 00 00",
		want: plain, len: 24,
	}, {
		desc: "unknown options of every action are skipped",
		in: "3a 04 | 1e 02 aaaa | 5e 00 | 9e 10 20010db8 00000000 00000000 00000002 | " +
			"de 01 bb | fe 00 | 01 07 00000000000000",
		want: plain, len: 40,
	}, {
		desc: "first fast cnp option wins",
		in: "3a 05 | 9e 10 20010db8 00000000 00000000 00000002 | " +
			"9d 12 0000 20010db8 00000000 00000000 00000009 | 01 06 000000000000",
		want: plain, len: 48,
	}, {
		desc: "trailing bytes after the header are not read",
		in:   "3a 02 | 9e 10 20010db8 00000000 00000000 00000002 | 01 02 0000 | ffffffff",
		want: plain, len: 24,
	}, {
		desc:  "nil code points mean the defaults",
		in:    "3a 02 | 01 02 0000 | 9e 10 20010db8 00000000 00000000 00000002",
		nilCP: true, want: plain, len: 24,
	}, {
		desc: "other code points",
		in:   "3a 02 | 01 02 0000 | 9f 10 20010db8 00000000 00000000 00000002",
		cp:   &CodePoints{FastCNPOptType: 0x9F, FastCNPIOAMOptType: 0x9E},
		want: plain, len: 24,
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c := tt.cp
			if c == nil && !tt.nilCP {
				c = &cp
			}
			got, nh, hl, err := DecodeDestOpts(specHex(t, tt.in), c)
			if err != nil {
				t.Fatalf("DecodeDestOpts: %v", err)
			}
			if nh != 0x3a || hl != tt.len {
				t.Errorf("next header, length = %#x, %d; want 0x3a, %d", nh, hl, tt.len)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DecodeDestOpts (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestDestOptsIOAMDataAliasesInput(t *testing.T) {
	in := specHex(t, "11 03 | 01 00 | 9d 1a 00 01 | 0001 0800 f00000 00 | 20010db8 00000000 00000000 00000002")
	opt, _, _, err := DecodeDestOpts(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if &opt.IOAMData[0] != &in[8] {
		t.Errorf("IOAMData is a copy, want a sub-slice of the input")
	}
	if cap(opt.IOAMData) != len(opt.IOAMData) {
		t.Errorf("IOAMData cap %d > len %d: an append would overwrite the address", cap(opt.IOAMData), len(opt.IOAMData))
	}
}

func TestDestOptsDecodeErrors(t *testing.T) {
	tests := []struct {
		desc string
		in   string
		want error
	}{
		{"empty", "", ErrTruncated},
		{"one byte", "11", ErrTruncated},
		{"hdr ext len past the input", "11 02 | 01 02 0000 | 9e 10 20010db8 00000000 00000000", ErrTruncated},
		{"option runs past the header", "11 00 | 01 08 0000 0000", ErrLength},
		{"option header cut by the header end", "11 00 | 01 03 000000 | 9e", ErrLength},
		{"fast cnp option of the wrong length", "11 01 | 9e 0c 20010db8 00000000 00000000 | 0000", ErrLength},
		{"ioam option below 18", "11 02 | 01 01 00 | 9d 11 00 00 0db8 00000000 00000000 00000002 00", ErrLength},
		{"padding only", "11 00 | 01 04 00000000", ErrUnsupported},
		{"other options only", "11 00 | 1e 04 00000000", ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, _, _, err := DecodeDestOpts(specHex(t, tt.in), nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("DecodeDestOpts error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDestOptsEncodeErrors(t *testing.T) {
	def := DefaultCodePoints()
	withTypes := func(plain, ioam uint8) *CodePoints {
		c := def
		c.FastCNPOptType, c.FastCNPIOAMOptType = plain, ioam
		return &c
	}
	tests := []struct {
		desc string
		opt  FastCNPOption
		buf  int
		cp   *CodePoints
		want error
	}{
		{"short buffer", FastCNPOption{}, 23, &def, ErrShortBuffer},
		{"short buffer ioam", FastCNPOption{IOAM: true, IOAMData: make([]byte, 8)}, 31, &def, ErrShortBuffer},
		{"ioam data too long", FastCNPOption{IOAM: true, IOAMData: make([]byte, MaxFastCNPIOAMData+1)}, 512, &def, ErrInvalid},
		{"action bits 00", FastCNPOption{}, 64, withTypes(0x1E, 0x9D), ErrInvalid},
		{"action bits 11", FastCNPOption{}, 64, withTypes(0xDE, 0x9D), ErrInvalid},
		{"action bits 01", FastCNPOption{}, 64, withTypes(0x5E, 0x9D), ErrInvalid},
		{"change bit set", FastCNPOption{}, 64, withTypes(0xBE, 0x9D), ErrInvalid},
		{"ioam change bit set", FastCNPOption{IOAM: true}, 64, withTypes(0x9E, 0xBD), ErrInvalid},
		{"both types equal", FastCNPOption{}, 64, withTypes(0x9E, 0x9E), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := tt.opt.EncodeDestOpts(make([]byte, tt.buf), 17, tt.cp)
			if !errors.Is(err, tt.want) {
				t.Errorf("EncodeDestOpts error = %v, want %v", err, tt.want)
			}
		})
	}
	// The largest IOAM data fits.
	o := FastCNPOption{IOAM: true, IOAMData: make([]byte, MaxFastCNPIOAMData)}
	b := make([]byte, o.DestOptsLen())
	if _, err := o.EncodeDestOpts(b, 17, nil); err != nil {
		t.Fatalf("EncodeDestOpts with %d bytes of ioam data: %v", MaxFastCNPIOAMData, err)
	}
	if _, _, _, err := DecodeDestOpts(b, nil); err != nil {
		t.Fatalf("DecodeDestOpts of the largest option: %v", err)
	}
}

func TestDestOptsRoundTripAllSizes(t *testing.T) {
	for n := 0; n <= MaxFastCNPIOAMData; n++ {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i + 1)
		}
		o := FastCNPOption{OrigDst: destOptsDst, IOAM: true, IOAMOptType: 2, IOAMData: data}
		b := make([]byte, o.DestOptsLen())
		if len(b)%8 != 0 {
			t.Fatalf("n=%d: DestOptsLen %d not a multiple of 8", n, len(b))
		}
		if _, err := o.EncodeDestOpts(b, 17, nil); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if (len(b)-16)%8 != 0 || n%4 == 0 && (bytes.Index(b, data[:min(n, 4)])%4 != 0) {
			t.Errorf("n=%d: misaligned layout % x", n, b)
		}
		got, _, _, err := DecodeDestOpts(b, nil)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if diff := cmp.Diff(o, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("n=%d: round trip (-want, +got):\n%s", n, diff)
		}
	}
}

func TestDestOptsZeroAlloc(t *testing.T) {
	cp := DefaultCodePoints()
	o := FastCNPOption{OrigDst: destOptsDst, IOAM: true, IOAMData: make([]byte, 24)}
	b := make([]byte, 64)
	if a := testing.AllocsPerRun(100, func() {
		if _, err := o.EncodeDestOpts(b, 17, &cp); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("EncodeDestOpts allocates %v times", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, _, _, err := DecodeDestOpts(b, &cp); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("DecodeDestOpts allocates %v times", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, _, _, err := DecodeDestOpts(b, nil); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("DecodeDestOpts(nil code points) allocates %v times", a)
	}
}

func FuzzDecodeDestOpts(f *testing.F) {
	cp := DefaultCodePoints()
	for _, o := range []FastCNPOption{
		{OrigDst: destOptsDst},
		{OrigDst: destOptsDst, IOAM: true},
		{OrigDst: destOptsDst, IOAM: true, IOAMOptType: 1, IOAMData: []byte{0, 1, 8, 0, 0xf0, 0, 0, 0}},
		{OrigDst: destOptsDst, IOAM: true, IOAMData: []byte{1, 2, 3}},
	} {
		b := make([]byte, o.DestOptsLen())
		if _, err := o.EncodeDestOpts(b, 17, &cp); err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(specHex(f, "3a 04 | 1e 02 aaaa | 5e 00 | 9e 10 20010db8 00000000 00000000 00000002 | de 01 bb | fe 00 | 01 07 00000000000000"))
	f.Fuzz(func(t *testing.T, in []byte) {
		o, nh, hl, err := DecodeDestOpts(in, &cp)
		if err != nil {
			return
		}
		if hl > len(in) || hl%8 != 0 {
			t.Fatalf("header length %d for %d bytes of input", hl, len(in))
		}
		b := make([]byte, o.DestOptsLen())
		n, err := o.EncodeDestOpts(b, nh, &cp)
		if err != nil {
			t.Fatalf("EncodeDestOpts(DecodeDestOpts(x)): %v", err)
		}
		o2, nh2, hl2, err := DecodeDestOpts(b[:n], &cp)
		if err != nil {
			t.Fatalf("DecodeDestOpts(EncodeDestOpts(DecodeDestOpts(x))): %v", err)
		}
		if nh2 != nh || hl2 != n {
			t.Errorf("next header, length = %d, %d; want %d, %d", nh2, hl2, nh, n)
		}
		if diff := cmp.Diff(o, o2, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip (-first, +second):\n%s", diff)
		}
	})
}
