package wire

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestZeroAlloc checks that decoding every format and encoding it again
// allocate nothing once a Frame has been used.
func TestZeroAlloc(t *testing.T) {
	for _, c := range frCases() {
		b := frEncode(t, c)
		var d Decoder
		var f Frame
		if a := testing.AllocsPerRun(50, func() {
			if err := d.Decode(b, &f); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: Decode allocates %v times per run", c.desc, a)
		}
		var e Encoder
		out := make([]byte, 4096)
		if a := testing.AllocsPerRun(50, func() {
			if _, err := c.enc(&e, out, &c.a); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: encode allocates %v times per run", c.desc, a)
		}
	}
}

// TestPcapRoundTrip writes every sample frame to a pcap and reads it back,
// in both timestamp resolutions.
func TestPcapRoundTrip(t *testing.T) {
	var frames [][]byte
	for _, c := range frCases() {
		frames = append(frames, frEncode(t, c))
	}
	for _, nano := range []bool{false, true} {
		var buf bytes.Buffer
		w, err := NewPcapWriter(&buf, nano)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Unix(1780000000, 123456789)
		for i, fr := range frames {
			if err := w.WritePacket(t0.Add(time.Duration(i)*time.Microsecond), fr); err != nil {
				t.Fatal(err)
			}
		}
		r, err := NewPcapReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		frWant(t, "link type", r.LinkType(), uint32(LinkTypeEthernet))
		for i := 0; ; i++ {
			fr, ts, orig, err := r.Next()
			if err == io.EOF {
				frWant(t, "frames", i, len(frames))
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fr, frames[i]) || orig != len(frames[i]) {
				t.Fatalf("frame %d differs", i)
			}
			wantTS := t0.Add(time.Duration(i) * time.Microsecond)
			if !nano {
				wantTS = wantTS.Truncate(time.Microsecond)
			}
			if !ts.Equal(wantTS) {
				t.Errorf("frame %d: ts %v, want %v", i, ts, wantTS)
			}
		}
	}
	// A record cut short.
	var buf bytes.Buffer
	w, _ := NewPcapWriter(&buf, true)
	_ = w.WritePacket(time.Unix(0, 0), frames[0])
	r, _ := NewPcapReader(bytes.NewReader(buf.Bytes()[:buf.Len()-1]))
	if _, _, _, err := r.Next(); !errorsIs(err, ErrTruncated) {
		t.Errorf("cut record: err = %v, want ErrTruncated", err)
	}
	if _, err := NewPcapReader(bytes.NewReader([]byte("not a pcap file at all!!"))); !errorsIs(err, ErrUnsupported) {
		t.Errorf("bad magic: err = %v, want ErrUnsupported", err)
	}
}

// TestFrameReset decodes every sample frame into a Frame that held each
// other sample before, and checks the result equals a decode into a fresh
// Frame: Decode's partial reset leaves nothing stale.
func TestFrameReset(t *testing.T) {
	var frames [][]byte
	for _, c := range frCases() {
		frames = append(frames, frEncode(t, c))
	}
	// A truncated frame leaves a partly filled Frame behind.
	frames = append(frames, frames[0][:EthernetLen+10])
	var d Decoder
	for i, prev := range frames {
		for j, cur := range frames {
			var reused, fresh Frame
			_ = d.Decode(prev, &reused)
			errR := d.Decode(cur, &reused)
			errF := d.Decode(cur, &fresh)
			if (errR == nil) != (errF == nil) {
				t.Fatalf("frame %d after %d: err %v, fresh %v", j, i, errR, errF)
			}
			// Objects' capacity is kept on purpose; compare contents.
			if d := cmp.Diff(fresh, reused, append(frCmpOpts[:2:2], cmpopts.IgnoreUnexported(Frame{}))...); d != "" {
				t.Fatalf("frame %d decoded after frame %d differs from a fresh decode (-fresh, +reused):\n%s", j, i, d)
			}
		}
	}
}
