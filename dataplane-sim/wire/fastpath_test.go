package wire

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fastCmpOpts shows how Frames differ (reflect.DeepEqual decides: nil and
// empty slices differ).
var fastCmpOpts = []cmp.Option{cmpopts.EquateComparable(netip.Addr{}), cmpopts.IgnoreUnexported(Frame{})}

// decodeBoth decodes cur into a Frame that held prev (nil: a fresh Frame),
// with and without decodeRoCEv6, and reports any difference in the Frames
// or the errors.
func decodeBoth(t *testing.T, d *Decoder, prev, cur []byte) {
	t.Helper()
	var fast, slow Frame
	if prev != nil {
		decodeFastOff = true
		_ = d.Decode(prev, &fast)
		_ = d.Decode(prev, &slow)
		decodeFastOff = false
	}
	errF := d.Decode(cur, &fast)
	decodeFastOff = true
	errS := d.Decode(cur, &slow)
	decodeFastOff = false
	if errString(errF) != errString(errS) {
		t.Fatalf("error %q, general decoder %q\nprev %x\ncur  %x", errString(errF), errString(errS), prev, cur)
	}
	fast.icrcBuf, slow.icrcBuf = [icrcBufLen]byte{}, [icrcBufLen]byte{}
	if reflect.DeepEqual(&fast, &slow) {
		return
	}
	if diff := cmp.Diff(slow, fast, fastCmpOpts...); true {
		t.Fatalf("frame differs from the general decoder's (-general, +fast):\n%s\nprev %x\ncur  %x", diff, prev, cur)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFastPathAgrees checks decodeRoCEv6 against the general decoder on
// every sample frame, every one-bit change and truncation of them, with
// every Decoder option, into fresh Frames and into Frames that held each
// sample before.
func TestFastPathAgrees(t *testing.T) {
	var base [][]byte
	for _, c := range frCases() {
		base = append(base, frEncode(t, c))
	}
	var frames [][]byte
	for _, b := range base {
		frames = append(frames, b)
		for i := range b {
			for _, bit := range []byte{0x01, 0x20, 0x80} {
				m := append([]byte(nil), b...)
				m[i] ^= bit
				frames = append(frames, m)
			}
		}
		for n := 0; n < len(b); n += 3 {
			frames = append(frames, b[:n])
		}
		frames = append(frames, append(append([]byte(nil), b...), 0xAA, 0xBB)) // trailer
	}
	decoders := []Decoder{
		{}, {SkipICRC: true}, {SkipChecksums: true}, {SkipICRC: true, SkipChecksums: true},
		{AllowZeroUDPChecksumIPv6: true}, {Legacy: true}, {Legacy: true, LegacyStrictLength: true},
		{CodePoints: CodePoints{RateAdviceOpcode: OpCNP}},
		{CodePoints: CodePoints{FCNPort: RoCEv2Port, RateAdviceOpcode: 0x82}},
	}
	prevs := append([][]byte{nil, base[0][:EthernetLen+10]}, base...)
	for di := range decoders {
		d := &decoders[di]
		for i, cur := range frames {
			// Every change with the first four decoders, a sample with the others.
			if di < 4 || i%7 == 0 {
				decodeBoth(t, d, nil, cur)
			}
		}
		for _, prev := range prevs {
			for _, cur := range base {
				decodeBoth(t, d, prev, cur)
			}
		}
	}
	// Sample frames after one-bit changes, whose partial decodes leave
	// most behind.
	var d Decoder
	for _, prev := range frames {
		decodeBoth(t, &d, prev, base[len(base)/2])
	}
}

// TestFastPathTaken checks that the benchmark frame, with a VLAN tag and
// as a standard CNP too, takes decodeRoCEv6.
func TestFastPathTaken(t *testing.T) {
	var e Encoder
	a := frAddr6()
	m := frExample()
	buf := make([]byte, 256)
	for _, vlan := range []bool{false, true} {
		a.VLAN = VLAN{Present: vlan, ID: 7, PCP: 3}
		for _, lh := range []bool{false, true} {
			var n int
			var err error
			if lh {
				n, err = e.LongHaulRoCE(buf, &a, &CNP{DestQP: 100}, &m)
			} else {
				n, err = e.CNP(buf, &a, &CNP{DestQP: 100})
			}
			if err != nil {
				t.Fatal(err)
			}
			var d Decoder
			var f Frame
			if !d.decodeRoCEv6(buf[:n], &f) {
				t.Errorf("vlan %v long-haul %v: not taken", vlan, lh)
			}
		}
	}
}
