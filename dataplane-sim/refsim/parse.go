package refsim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The reference's packet trace (TRACE_OUTPUT_FILE) is its SimSetting
// header (uint32 n, n x {uint16 node, uint8 intf, uint64 bps}, uint32
// window; fields written one by one, little endian) followed by
// TraceFormat records written as the C struct on x86-64: 56 bytes, the
// offsets below (trace-format.h).
const (
	traceRecordBytes = 56
	offTime          = 0  // uint64 ns
	offNode          = 8  // uint16
	offIntf          = 10 // uint8
	offQidx          = 11 // uint8
	offQlen          = 12 // uint32 bytes in that queue
	offSip           = 16 // uint32
	offDip           = 20 // uint32
	offSize          = 24 // uint16 frame bytes
	offL3Prot        = 26 // uint8
	offEvent         = 27 // uint8: 0 Recv, 1 Enqu, 2 Dequ, 3 Drop
	offSport         = 32 // uint16 (data)
	l3UDP            = 0x11
	evEnqu, evDequ   = 1, 2
	evDrop           = 3
)

// ipToNode is the reference's ip_to_node_id.
func ipToNode(ip uint32) int { return int(ip>>8) & 0xffff }

// readTrace feeds the bottleneck's queue, per-flow dequeued bytes and
// drops from the trace into se.
// For a fabric it feeds the queues of the switch ports towards hosts into
// pq instead (and drops at every traced switch).
func readTrace(r io.Reader, t *Translation, se *series, pq *portQueues) (drops int64, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var n uint32
	if err := binary.Read(br, binary.LittleEndian, &n); err != nil {
		return 0, fmt.Errorf("trace header: %w", err)
	}
	if n > 1<<20 {
		return 0, fmt.Errorf("trace header: %d port speeds", n)
	}
	if _, err := br.Discard(int(n)*11 + 4); err != nil {
		return 0, fmt.Errorf("trace header: %w", err)
	}
	rec := make([]byte, traceRecordBytes)
	var lastT uint64
	for i := 0; ; i++ {
		if _, err := io.ReadFull(br, rec); err != nil {
			if errors.Is(err, io.EOF) {
				return drops, nil
			}
			return drops, fmt.Errorf("trace record %d: %w", i, err)
		}
		le := binary.LittleEndian
		ts := le.Uint64(rec[offTime:])
		if ts > 1<<62 {
			return drops, fmt.Errorf("trace record %d: time %d ns out of range", i, ts)
		}
		if ts < lastT {
			return drops, fmt.Errorf("trace record %d: time %d before %d", i, ts, lastT)
		}
		lastT = ts
		if t.Fabric {
			port := [2]int{int(le.Uint16(rec[offNode:])), int(rec[offIntf])}
			ev := rec[offEvent]
			switch {
			case ev == evDrop:
				drops++
			case t.HostPorts[port] && rec[offQidx] == refDataPG && (ev == evEnqu || ev == evDequ):
				pq.set(port, int64(ts), int64(le.Uint32(rec[offQlen:])))
			}
			continue
		}
		if int(le.Uint16(rec[offNode:])) != t.BottleneckNode || int(rec[offIntf]) != t.BottleneckIf {
			continue
		}
		ev := rec[offEvent]
		if rec[offQidx] == refDataPG && (ev == evEnqu || ev == evDequ) {
			se.set(int64(ts), float64(le.Uint32(rec[offQlen:])))
		}
		switch {
		case ev == evDrop:
			drops++
		case ev == evDequ && rec[offL3Prot] == l3UDP:
			k := FlowKey{Src: ipToNode(le.Uint32(rec[offSip:])), Dst: ipToNode(le.Uint32(rec[offDip:])), Sport: le.Uint16(rec[offSport:])}
			if name, ok := t.FlowKey[k]; ok {
				se.add(name, int64(ts), int64(le.Uint16(rec[offSize:])))
			}
		}
	}
}

// readFCT reads fct.txt: "sip dip sport dport size start_ns fct_ns
// standalone_ns" per finished flow, addresses in hex: the FCT and the
// standalone (ideal) FCT by flow name.
func readFCT(r io.Reader, t *Translation) (map[string][2]int64, error) {
	out := map[string][2]int64{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 8 {
			return nil, fmt.Errorf("fct line %d: %d fields, want 8", line, len(f))
		}
		var v [8]uint64
		for i, s := range f {
			base := 10
			if i < 2 {
				base = 16
			}
			x, err := strconv.ParseUint(s, base, 64)
			if err != nil {
				return nil, fmt.Errorf("fct line %d field %d: %w", line, i+1, err)
			}
			v[i] = x
		}
		if v[2] > 0xffff {
			return nil, fmt.Errorf("fct line %d: source port %d", line, v[2])
		}
		k := FlowKey{Src: ipToNode(uint32(v[0])), Dst: ipToNode(uint32(v[1])), Sport: uint16(v[2])}
		name, ok := t.FlowKey[k]
		if !ok {
			return nil, fmt.Errorf("fct line %d: no flow %d->%d port %d in the translation", line, k.Src, k.Dst, k.Sport)
		}
		out[name] = [2]int64{int64(v[6]), int64(v[7])}
	}
	return out, sc.Err()
}

// ReadRateLog reads the rate log that the reference prints on its
// standard output when built with its logging on (rdma-hw.cc PRINT_LOG 1;
// docs/validation.md): "time_ns rate dec: sip dip sport dport (target
// rate)->(target rate)" per DCQCN rate decrease, addresses in hex. It
// returns each translated flow's first decrease, in ns after the flow's
// start in the reference (when its first packet leaves); other lines are
// skipped.
func ReadRateLog(r io.Reader, t *Translation) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) < 7 || f[1] != "rate" || f[2] != "dec:" {
			continue
		}
		var v [5]uint64
		for i, s := range []string{f[0], f[3], f[4], f[5], f[6]} {
			base := 10
			if i == 1 || i == 2 {
				base = 16
			}
			x, err := strconv.ParseUint(s, base, 64)
			if err != nil {
				return nil, fmt.Errorf("rate log line %d: %w", line, err)
			}
			v[i] = x
		}
		if v[0] > 1<<62 || v[3] > 0xffff {
			return nil, fmt.Errorf("rate log line %d: time %d or port %d out of range", line, v[0], v[3])
		}
		k := FlowKey{Src: ipToNode(uint32(v[1])), Dst: ipToNode(uint32(v[2])), Sport: uint16(v[3])}
		name, ok := t.FlowKey[k]
		if !ok {
			return nil, fmt.Errorf("rate log line %d: no flow %d->%d port %d in the translation", line, k.Src, k.Dst, k.Sport)
		}
		if _, seen := out[name]; !seen {
			out[name] = int64(v[0]) - t.FlowStartNs[name]
		}
	}
	return out, sc.Err()
}

// readPFC reads pfc.txt: "time_ns node node_type if type" where type 1 is
// a PAUSE and 0 a RESUME received by that device; it returns the paused
// time summed over devices (a pause still on at endNs ends there) and the
// PAUSE count.
func readPFC(r io.Reader, endNs int64) (pausedNs, pauses int64, err error) {
	since := map[[2]uint64]int64{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return 0, 0, fmt.Errorf("pfc line %d: %d fields, want 5", line, len(f))
		}
		var v [5]uint64
		for i, s := range f {
			x, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("pfc line %d field %d: %w", line, i+1, err)
			}
			v[i] = x
		}
		if v[0] > 1<<62 {
			return 0, 0, fmt.Errorf("pfc line %d: time %d", line, v[0])
		}
		dev, ts := [2]uint64{v[1], v[3]}, int64(v[0])
		switch v[4] {
		case 1:
			pauses++
			if _, on := since[dev]; !on {
				since[dev] = ts
			}
		case 0:
			if t0, on := since[dev]; on {
				pausedNs += max(0, min(ts, endNs)-t0)
				delete(since, dev)
			}
		default:
			return 0, 0, fmt.Errorf("pfc line %d: type %d, want 0 or 1", line, v[4])
		}
	}
	for _, t0 := range since {
		pausedNs += max(0, endNs-t0)
	}
	return pausedNs, pauses, sc.Err()
}

// SummariseReference reads the reference's outputs for a translated
// scenario: the packet trace, fct.txt and pfc.txt.
func SummariseReference(name string, t *Translation, trace, fct, pfc io.Reader, dur, step time.Duration) (*Summary, error) {
	se := newSeries(step.Nanoseconds(), dur.Nanoseconds())
	pq := newPortQueues(dur.Nanoseconds())
	drops, err := readTrace(trace, t, se, pq)
	if err != nil {
		return nil, err
	}
	fcts, err := readFCT(fct, t)
	if err != nil {
		return nil, err
	}
	paused, pauses, err := readPFC(pfc, dur.Nanoseconds())
	if err != nil {
		return nil, err
	}
	q, thr := se.finish()
	s := &Summary{Scenario: name, Simulator: "reference", StepNs: step.Nanoseconds(), QueueBytes: q,
		PFCPauseNs: paused, PFCPauses: pauses, Drops: drops, BottleneckPackets: se.packets}
	if t.Fabric {
		s.QueueBytes, s.StepNs = nil, 0
		s.HostPortQueueNs = pq.finish(t.HostPorts)
	}
	for _, n := range t.FlowOrder {
		fs := FlowSummary{Name: n, ThroughputBitsPerSec: thr[n], FCTNs: fcts[n][0]}
		if t.Fabric {
			fs.SizeBytes, fs.IdealNs = t.FlowSize[n], fcts[n][1]
		} else if fs.ThroughputBitsPerSec == nil {
			fs.ThroughputBitsPerSec = make([]float64, len(q))
		}
		s.Flows = append(s.Flows, fs)
	}
	s.fctPercentiles()
	return s, nil
}

func errNoSwitch(name string) error { return fmt.Errorf("refsim: no switch %q", name) }
