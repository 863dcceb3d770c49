package refsim

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// traceBytes writes a reference trace: the SimSetting header with one port
// speed and the given records.
func traceBytes(recs ...[]byte) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	_ = binary.Write(&b, le, uint32(1))
	_ = binary.Write(&b, le, uint16(3))
	b.WriteByte(1)
	_ = binary.Write(&b, le, uint64(25e9))
	_ = binary.Write(&b, le, uint32(0))
	for _, r := range recs {
		b.Write(r)
	}
	return b.Bytes()
}

// record is one TraceFormat record at node 3, device 1.
func record(tNs uint64, ev byte, qlen uint32, srcNode int, sport uint16, size uint16) []byte {
	r := make([]byte, traceRecordBytes)
	le := binary.LittleEndian
	le.PutUint64(r[offTime:], tNs)
	le.PutUint16(r[offNode:], 3)
	r[offIntf], r[offQidx] = 1, refDataPG
	le.PutUint32(r[offQlen:], qlen)
	le.PutUint32(r[offSip:], 0x0b000001+uint32(srcNode)*0x100)
	le.PutUint32(r[offDip:], 0x0b000001)
	le.PutUint16(r[offSize:], size)
	r[offL3Prot], r[offEvent] = l3UDP, ev
	le.PutUint16(r[offSport:], sport)
	return r
}

func testTranslation() *Translation {
	return &Translation{BottleneckNode: 3, BottleneckIf: 1, FlowOrder: []string{"a", "b"},
		FlowKey: map[FlowKey]string{{Src: 1, Dst: 0, Sport: 10000}: "a", {Src: 2, Dst: 0, Sport: 10000}: "b"}}
}

func TestSummariseReference(t *testing.T) {
	tr := traceBytes(
		record(0, evEnqu, 1000, 1, 10000, 1000),
		record(500, evDequ, 0, 1, 10000, 1000), // queue 1000 B for the first 500 ns
		record(1500, evDequ, 0, 2, 10000, 1000),
		record(1600, evDrop, 0, 2, 10000, 1000),
	)
	fct := "0b000101 0b000001 10000 100 20000 0 1500 1200\n"
	pfc := "100 1 0 1 1\n400 1 0 1 0\n1800 2 0 1 1\n"
	s, err := SummariseReference("x", testTranslation(), bytes.NewReader(tr), strings.NewReader(fct), strings.NewReader(pfc), 2*time.Microsecond, time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.QueueBytes, []float64{500, 0}; !equal(got, want) {
		t.Errorf("queue %v, want %v", got, want)
	}
	if got := s.Flow("a").ThroughputBitsPerSec; !equal(got, []float64{8e9, 0}) {
		t.Errorf("a: %v", got)
	}
	if got := s.Flow("b").ThroughputBitsPerSec; !equal(got, []float64{0, 8e9}) {
		t.Errorf("b: %v", got)
	}
	if s.Flow("a").FCTNs != 1500 || s.Flow("b").FCTNs != 0 || s.FCTP50Ns != 1500 {
		t.Errorf("fct a %d b %d p50 %d", s.Flow("a").FCTNs, s.Flow("b").FCTNs, s.FCTP50Ns)
	}
	if s.PFCPauseNs != 300+200 || s.PFCPauses != 2 || s.Drops != 1 || s.BottleneckPackets != 2 {
		t.Errorf("pfc %d ns %d pauses, drops %d, packets %d", s.PFCPauseNs, s.PFCPauses, s.Drops, s.BottleneckPackets)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		desc, trace, fct, pfc, want string
	}{
		{desc: "short header", trace: "\x01", want: "trace header"},
		{desc: "cut record", trace: string(traceBytes(record(0, evEnqu, 0, 1, 10000, 1000)[:30])), want: "trace record 0"},
		{desc: "time backwards", trace: string(traceBytes(record(5, evEnqu, 0, 1, 10000, 1000), record(4, evEnqu, 0, 1, 10000, 1000))), want: "before"},
		{desc: "time out of range", trace: string(traceBytes(record(1<<63, evEnqu, 0, 1, 10000, 1000))), want: "out of range"},
		{desc: "fct fields", trace: string(traceBytes()), fct: "1 2 3\n", want: "fct line 1: 3 fields"},
		{desc: "fct unknown flow", trace: string(traceBytes()), fct: "0b000901 0b000001 10000 100 1 0 1 1\n", want: "no flow 9->0"},
		{desc: "pfc type", trace: string(traceBytes()), pfc: "1 1 0 1 7\n", want: "pfc line 1: type 7"},
		{desc: "pfc number", trace: string(traceBytes()), pfc: "x 1 0 1 1\n", want: "pfc line 1 field 1"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := SummariseReference("x", testTranslation(), strings.NewReader(tt.trace), strings.NewReader(tt.fct), strings.NewReader(tt.pfc), time.Microsecond, time.Microsecond)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func FuzzReadTrace(f *testing.F) {
	f.Add(traceBytes(record(0, evEnqu, 1000, 1, 10000, 1000), record(9, evDequ, 0, 2, 10000, 1000)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		se := newSeries(1000, 1_000_000)
		_, _ = readTrace(bytes.NewReader(b), testTranslation(), se, newPortQueues(1e6))
		se.finish()
	})
}

func FuzzReadFCT(f *testing.F) {
	f.Add("0b000101 0b000001 10000 100 20000 0 1500 1200\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = readFCT(strings.NewReader(s), testTranslation()) })
}

func FuzzReadPFC(f *testing.F) {
	f.Add("100 1 0 1 1\n400 1 0 1 0\n")
	f.Fuzz(func(t *testing.T, s string) {
		p, n, err := readPFC(strings.NewReader(s), 1_000_000)
		if err == nil && (p < 0 || n < 0) {
			t.Errorf("negative pause %d or count %d", p, n)
		}
	})
}

// The rate log's first decrease per flow, after the flow's start; other
// lines (the run's banner, increases) are skipped.
func TestReadRateLog(t *testing.T) {
	tr := testTranslation()
	tr.FlowStartNs = map[string]int64{"a": 4000, "b": 4000}
	log := "maxRtt=4640 maxBdp=14500\nRunning Simulation.\n" +
		"54583 rate dec: 0b000201 0b000001 10000 100 (25.000 25.000)->(25.000 12.694)\n" +
		"54918 rate dec: 0b000101 0b000001 10000 100 (25.000 25.000)->(25.000 12.597)\n" +
		"74583 rate dec: 0b000201 0b000001 10000 100 (25.000 12.694)->(25.000 6.891)\n" +
		"394918 fast recovery: 0b000101 0b000001 10000 100 (25.000 7.204)->(25.000 16.102)\n"
	got, err := ReadRateLog(strings.NewReader(log), tr)
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != 50918 || got["b"] != 50583 || len(got) != 2 {
		t.Errorf("first cuts %v, want a 50918 and b 50583", got)
	}
	for _, bad := range []string{
		"12 rate dec: 0b000301 0b000001 10000 100 (1 1)->(1 1)\n", // no such flow
		"x rate dec: 0b000201 0b000001 10000 100 (1 1)->(1 1)\n",
		"12 rate dec: 0b000201 0b000001 70000 100 (1 1)->(1 1)\n",
	} {
		if _, err := ReadRateLog(strings.NewReader(bad), tr); err == nil || !strings.Contains(err.Error(), "rate log line 1") {
			t.Errorf("%q: err %v, want one naming rate log line 1", bad, err)
		}
	}
}

func FuzzReadRateLog(f *testing.F) {
	f.Add("54583 rate dec: 0b000201 0b000001 10000 100 (25.000 25.000)->(25.000 12.694)\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ReadRateLog(strings.NewReader(s), testTranslation()) })
}
