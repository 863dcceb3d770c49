package wire

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFCNGolden(t *testing.T) {
	tests := []struct {
		desc string
		msg  FCNMessage
		want string // Flow Label (20) | CL (3) | Rvd (9), from the draft's Figure 4
	}{
		{"label and level", FCNMessage{FlowLabel: 0xABCDE, Level: 5}, "abcde a00"},
		{"level not used", FCNMessage{FlowLabel: 0x00001, Level: 0}, "00001 000"},
		{"all ones", FCNMessage{FlowLabel: MaxFCNFlowLabel, Level: MaxFCNLevel}, "fffff e00"},
		{"reserved is written as zero", FCNMessage{FlowLabel: 0x12345, Level: 1, Reserved: 0x1FF}, "12345 200"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			want := specHex(t, tt.want)
			b := []byte{0xEE, 0xEE, 0xEE, 0xEE, 0xEE}
			n, err := tt.msg.Encode(b)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if diff := cmp.Diff(want, b[:n]); diff != "" {
				t.Errorf("Encode (-want, +got):\n%s", diff)
			}
			if b[4] != 0xEE {
				t.Errorf("Encode wrote past FCNMessageLen")
			}
			got, err := DecodeFCN(want)
			if err != nil {
				t.Fatalf("DecodeFCN: %v", err)
			}
			wantMsg := tt.msg
			wantMsg.Reserved = 0
			if diff := cmp.Diff(wantMsg, got); diff != "" {
				t.Errorf("DecodeFCN (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestFCNReservedIgnoredOnReceipt(t *testing.T) {
	// 0xabcdeb23: label 0xabcde, then 0xb23 = 101 100100011: CL 5, Rvd 0x123.
	got, err := DecodeFCN(specHex(t, "abcdeb23"))
	if err != nil {
		t.Fatalf("DecodeFCN: %v", err)
	}
	if diff := cmp.Diff(FCNMessage{FlowLabel: 0xABCDE, Level: 5, Reserved: 0x123}, got); diff != "" {
		t.Errorf("DecodeFCN (-want, +got):\n%s", diff)
	}
}

func TestFCNErrors(t *testing.T) {
	for _, tt := range []struct {
		desc string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"three bytes", []byte{1, 2, 3}, ErrTruncated},
		{"five bytes", []byte{1, 2, 3, 4, 5}, ErrLength},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if _, err := DecodeFCN(tt.in); !errors.Is(err, tt.want) {
				t.Errorf("DecodeFCN error = %v, want %v", err, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		desc string
		msg  FCNMessage
		buf  int
		want error
	}{
		{"short buffer", FCNMessage{}, 3, ErrShortBuffer},
		{"flow label of 21 bits", FCNMessage{FlowLabel: 1 << 20}, 4, ErrInvalid},
		{"level 8", FCNMessage{Level: 8}, 4, ErrInvalid},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if _, err := tt.msg.Encode(make([]byte, tt.buf)); !errors.Is(err, tt.want) {
				t.Errorf("Encode error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFCNZeroAlloc(t *testing.T) {
	m := FCNMessage{FlowLabel: 0xABCDE, Level: 5}
	b := make([]byte, FCNMessageLen)
	if a := testing.AllocsPerRun(100, func() {
		if _, err := m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Encode allocates %v times", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := DecodeFCN(b); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("DecodeFCN allocates %v times", a)
	}
}

func FuzzDecodeFCN(f *testing.F) {
	f.Add([]byte{0xab, 0xcd, 0xea, 0x00})
	f.Add([]byte{0xab, 0xcd, 0xeb, 0x23})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := DecodeFCN(in)
		if err != nil {
			return
		}
		b := make([]byte, FCNMessageLen)
		if _, err := m.Encode(b); err != nil {
			t.Fatalf("Encode(DecodeFCN(x)): %v", err)
		}
		m2, err := DecodeFCN(b)
		if err != nil {
			t.Fatalf("DecodeFCN(Encode(DecodeFCN(x))): %v", err)
		}
		// Encode zeroes the reserved bits; everything else survives.
		want := m
		want.Reserved = 0
		if diff := cmp.Diff(want, m2); diff != "" {
			t.Errorf("round trip (-want, +got):\n%s", diff)
		}
		if m.Reserved == 0 && string(b) != string(in) {
			t.Errorf("re-encoding % x gave % x", in, b)
		}
	})
}
