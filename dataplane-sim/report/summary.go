package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
)

// Float is a float64 that marshals to JSON rounded to six decimals, so a
// summary's text does not depend on the last bits of a computation. NaN
// and infinities marshal as null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	r := math.Round(v*1e6) / 1e6
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.AppendFloat(nil, r, 'f', -1, 64), nil
}

// PortInput is what the runner knows about one switch egress port at the
// end of a run.
type PortInput struct {
	Node, Port string
	// Queue is the series of this port in Recorder.Queues.
	Queue SeriesID
	// RateBitsPerSec is the port's rate at the end (for the record).
	RateBitsPerSec int64
	// CapacityBits is the integral of the port's rate over the run, so that
	// utilisation stays right when an event changes the rate.
	CapacityBits float64
	// TxBytes and TxPackets are the frames the port sent on its link,
	// PFC frames included.
	TxBytes        int64
	TxPackets      int64
	PeakQueueBytes int64 // the model's exact peak; the sampled one if larger
	DropPackets    int64
	DropBytes      int64
	ECNMarks       int64
	PFCPauseFrames int64 // PAUSE frames this port sent upstream
	// PFCPausedNs is how long this egress was held by its peer's PAUSE.
	PFCPausedNs int64
	// The congested period (package sim's meter; zero when not measured):
	// the time the offered load through the port exceeded its rate, the
	// capacity and the bytes sent in that time, and when it first began
	// (ignored unless CongestedNs > 0).
	CongestedNs           int64
	CongestedCapacityBits float64
	CongestedTxBytes      int64
	FirstCongestedNs      int64
}

// FlowInput is what the runner knows about one flow at the end of a run.
type FlowInput struct {
	Name, Src, Dst string
	SrcQP, DstQP   uint32
	Group          string
	SizeBytes      int64 // 0: long-lived
	StartNs        int64
	// StopNs is when the flow was stopped before completing (its stop
	// time), or 0.
	StopNs     int64
	Finished   bool
	FinishNs   int64 // when the sender saw the last byte acknowledged
	IdealFCTNs int64 // FCT alone on an idle path: see IdealFCT
	RxBytes    int64 // payload delivered
	Lost       int64 // data packets lost
	CNPs       int64 // CNPs the receiver sent for it
	// Go-back-N (nic.loss_recovery): data packets sent again, local ACK
	// timeouts.
	RetxPackets, Timeouts int64
}

// Input is everything Summarize needs.
type Input struct {
	Scenario      string
	Mechanism     string
	Seed          int64
	DurationNs    int64
	SampleNs      int64
	Events        uint64
	Ports         []PortInput
	Flows         []FlowInput
	Notifications map[string]int64 // notifications sent, by kind
	Warnings      []string
	Recorder      *Recorder
	// Feedback is the per-sender feedback measurement (package sim's
	// meter), FeedbackSignal the kind of signal it timed ("ce-mark",
	// "long-haul-cnp"); none when empty.
	Feedback       []FeedbackInput
	FeedbackSignal string
	// MechanismCounters are the mechanism's own counters (deferrals,
	// escalations, ...), by name.
	MechanismCounters map[string]int64
}

// Summary is summary.json. Field order is the key order.
type Summary struct {
	Scenario         string           `json:"scenario"`
	Mechanism        string           `json:"mechanism"`
	Seed             int64            `json:"seed"`
	DurationNs       int64            `json:"duration_ns"`
	SampleIntervalNs int64            `json:"sample_interval_ns"`
	Events           uint64           `json:"events"`
	Totals           Totals           `json:"totals"`
	Notifications    map[string]int64 `json:"notifications"`
	Ports            []PortSummary    `json:"ports"`
	Flows            []FlowSummary    `json:"flows"`
	// Feedback and MechanismCounters are present when measured.
	Feedback          *Feedback        `json:"feedback,omitempty"`
	MechanismCounters map[string]int64 `json:"mechanism_counters,omitempty"`
	Warnings          []string         `json:"warnings"`
}

// Totals are network-wide figures.
type Totals struct {
	Flows         int   `json:"flows"`
	FlowsFinished int   `json:"flows_finished"`
	DropPackets   int64 `json:"drop_packets"`
	// RetransmittedPackets: the data packets the flows' senders sent again
	// (go-back-N, nic.loss_recovery), all flows.
	RetransmittedPackets int64 `json:"retransmitted_packets"`
	ECNMarks             int64 `json:"ecn_marks"`
	PFCPauseFrames       int64 `json:"pfc_pause_frames"`
	PFCPausedNs          int64 `json:"pfc_paused_ns"`
	PeakQueueBytes       int64 `json:"peak_queue_bytes"`
	// JainFairness is (sum x)^2 / (n sum x^2) over the throughputs of the
	// flows that started; 1 is perfectly fair.
	JainFairness Float `json:"jain_fairness"`
	MeanSlowdown Float `json:"mean_slowdown"`
	P99Slowdown  Float `json:"p99_slowdown"`
}

// PortSummary is one switch egress port.
type PortSummary struct {
	Node           string `json:"node"`
	Port           string `json:"port"`
	RateBitsPerSec int64  `json:"rate_bps"`
	PeakQueueBytes int64  `json:"peak_queue_bytes"`
	P99QueueBytes  int64  `json:"p99_queue_bytes"`
	MeanQueueBytes Float  `json:"mean_queue_bytes"`
	Utilisation    Float  `json:"utilisation"`
	TxBytes        int64  `json:"tx_bytes"`
	TxPackets      int64  `json:"tx_packets"`
	DropPackets    int64  `json:"drop_packets"`
	DropBytes      int64  `json:"drop_bytes"`
	ECNMarks       int64  `json:"ecn_marks"`
	PFCPauseFrames int64  `json:"pfc_pause_frames"`
	PFCPausedNs    int64  `json:"pfc_paused_ns"`
	// Over the congested period, when there was one: its length, when it
	// began and the utilisation in it (bytes sent / capacity).
	CongestedNs          int64  `json:"congested_ns,omitempty"`
	FirstCongestedNs     *int64 `json:"first_congested_ns,omitempty"`
	CongestedUtilisation *Float `json:"congested_utilisation,omitempty"`
}

// FlowSummary is one flow. FCT, ideal FCT and slowdown are present for
// finished flows only.
type FlowSummary struct {
	Name                 string `json:"name"`
	Group                string `json:"group,omitempty"`
	Src                  string `json:"src"`
	Dst                  string `json:"dst"`
	SrcQP                uint32 `json:"src_qp"`
	DstQP                uint32 `json:"dst_qp"`
	SizeBytes            int64  `json:"size_bytes"`
	StartNs              int64  `json:"start_ns"`
	Finished             bool   `json:"finished"`
	FCTNs                *int64 `json:"fct_ns,omitempty"`
	IdealFCTNs           *int64 `json:"ideal_fct_ns,omitempty"`
	Slowdown             *Float `json:"slowdown,omitempty"`
	RxBytes              int64  `json:"rx_bytes"`
	ThroughputBitsPerSec Float  `json:"throughput_bps"`
	LostPackets          int64  `json:"lost_packets"`
	CNPs                 int64  `json:"cnps"`
	// Present when go-back-N (nic.loss_recovery) sent packets again.
	RetxPackets int64 `json:"retransmitted_packets,omitempty"`
	Timeouts    int64 `json:"ack_timeouts,omitempty"`
}

// Summarize computes the summary. Ports and flows keep the input order.
func Summarize(in Input) *Summary {
	s := &Summary{
		Scenario: in.Scenario, Mechanism: in.Mechanism, Seed: in.Seed,
		DurationNs: in.DurationNs, SampleIntervalNs: in.SampleNs, Events: in.Events,
		Notifications: map[string]int64{}, Ports: []PortSummary{}, Flows: make([]FlowSummary, 0, len(in.Flows)),
		Warnings: append([]string{}, in.Warnings...),
	}
	for k, v := range in.Notifications {
		s.Notifications[k] = v
	}
	var qv [][]int64
	if in.Recorder != nil {
		_, qv = in.Recorder.Queues.bySeries()
	}
	for _, p := range in.Ports {
		var samples []int64
		if int(p.Queue) < len(qv) {
			samples = qv[p.Queue]
		}
		ps := PortSummary{
			Node: p.Node, Port: p.Port, RateBitsPerSec: p.RateBitsPerSec,
			PeakQueueBytes: max(p.PeakQueueBytes, maxOf(samples)),
			P99QueueBytes:  Percentile(samples, 0.99),
			MeanQueueBytes: Float(mean(samples)),
			TxBytes:        p.TxBytes, TxPackets: p.TxPackets, DropPackets: p.DropPackets, DropBytes: p.DropBytes,
			ECNMarks: p.ECNMarks, PFCPauseFrames: p.PFCPauseFrames, PFCPausedNs: p.PFCPausedNs,
		}
		if p.CapacityBits > 0 {
			// A frame being sent when the run ends counts whole: cap at 1.
			ps.Utilisation = Float(min(1, float64(p.TxBytes)*8/p.CapacityBits))
		}
		if p.CongestedNs > 0 && p.CongestedCapacityBits > 0 {
			first := p.FirstCongestedNs
			u := Float(min(1, float64(p.CongestedTxBytes)*8/p.CongestedCapacityBits))
			ps.CongestedNs, ps.FirstCongestedNs, ps.CongestedUtilisation = p.CongestedNs, &first, &u
		}
		s.Ports = append(s.Ports, ps)
		t := &s.Totals
		t.DropPackets += p.DropPackets
		t.ECNMarks += p.ECNMarks
		t.PFCPauseFrames += p.PFCPauseFrames
		t.PFCPausedNs += p.PFCPausedNs
		t.PeakQueueBytes = max(t.PeakQueueBytes, ps.PeakQueueBytes)
	}
	var tputs, slowdowns []float64
	for _, f := range in.Flows {
		fs := FlowSummary{
			Name: f.Name, Group: f.Group, Src: f.Src, Dst: f.Dst, SrcQP: f.SrcQP, DstQP: f.DstQP,
			SizeBytes: f.SizeBytes, StartNs: f.StartNs, Finished: f.Finished, RxBytes: f.RxBytes,
			LostPackets: f.Lost, CNPs: f.CNPs, RetxPackets: f.RetxPackets, Timeouts: f.Timeouts,
		}
		s.Totals.Flows++
		s.Totals.RetransmittedPackets += f.RetxPackets
		end := in.DurationNs
		if f.StopNs > 0 && f.StopNs < end {
			end = f.StopNs
		}
		if f.Finished {
			s.Totals.FlowsFinished++
			fct := f.FinishNs - f.StartNs
			fs.FCTNs = &fct
			end = f.FinishNs
			if f.IdealFCTNs > 0 {
				ideal := f.IdealFCTNs
				sd := Float(float64(fct) / float64(ideal))
				fs.IdealFCTNs, fs.Slowdown = &ideal, &sd
				slowdowns = append(slowdowns, float64(sd))
			}
		}
		if active := end - f.StartNs; f.StartNs < in.DurationNs && active > 0 {
			tp := float64(f.RxBytes) * 8 / (float64(active) / 1e9)
			fs.ThroughputBitsPerSec = Float(tp)
			tputs = append(tputs, tp)
		}
		s.Flows = append(s.Flows, fs)
	}
	s.Feedback = summarizeFeedback(in.FeedbackSignal, in.Feedback)
	if len(in.MechanismCounters) > 0 {
		s.MechanismCounters = map[string]int64{}
		for k, v := range in.MechanismCounters {
			s.MechanismCounters[k] = v
		}
	}
	s.Totals.JainFairness = Float(Jain(tputs))
	if len(slowdowns) > 0 {
		s.Totals.MeanSlowdown = Float(meanF(slowdowns))
		slices.Sort(slowdowns)
		s.Totals.P99Slowdown = Float(slowdowns[rank(len(slowdowns), 0.99)])
	}
	return s
}

// Jain returns Jain's fairness index of xs, (sum x)^2 / (n * sum x^2); 1 for
// an empty or all-zero list.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// Percentile returns the nearest-rank p-quantile (0 < p <= 1) of xs, 0 for
// none. xs is not modified.
func Percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	c := slices.Clone(xs)
	slices.Sort(c)
	return c[rank(len(c), p)]
}

func rank(n int, p float64) int {
	r := int(math.Ceil(p*float64(n))) - 1
	return min(max(r, 0), n-1)
}

// IdealFCT is the completion time of a flow alone on its path: one base
// RTT (the propagation delay there and back), the time to serialise the
// flow's frames at the bottleneck (the slowest hop, the first of equals),
// the first frame's store-and-forward delay at every hop before it and the
// last frame's at every hop after it. wireBytes is the sum of the flow's
// frames, firstFrameBytes and lastFrameBytes the sizes of its first and
// last, as the sender frames them (headers, RETH, pad bytes and FCS: the
// runner takes them from netsim.FlowFrameBytes); 0 for a long-lived flow
// (no bytes).
func IdealFCT(wireBytes, firstFrameBytes, lastFrameBytes, baseRTTNs int64, hopRatesBitsPerSec []int64) int64 {
	if wireBytes <= 0 || len(hopRatesBitsPerSec) == 0 {
		return 0
	}
	b := 0
	for i, r := range hopRatesBitsPerSec {
		if r < hopRatesBitsPerSec[b] {
			b = i
		}
	}
	ns := float64(baseRTTNs) + float64(wireBytes)*8e9/float64(hopRatesBitsPerSec[b])
	for i, r := range hopRatesBitsPerSec {
		switch {
		case i < b:
			ns += float64(firstFrameBytes) * 8e9 / float64(r)
		case i > b:
			ns += float64(lastFrameBytes) * 8e9 / float64(r)
		}
	}
	return int64(math.Ceil(ns))
}

// CMConnectNs is the time a connection set-up adds before the first data
// packet of a flow that connects with CM: the REQ there and the REP back
// (one base RTT), each frame of madBytes serialised at every hop.
func CMConnectNs(madBytes, baseRTTNs int64, hopRatesBitsPerSec []int64) int64 {
	ns := float64(baseRTTNs)
	for _, r := range hopRatesBitsPerSec {
		ns += 2 * float64(madBytes) * 8e9 / float64(r)
	}
	return int64(math.Ceil(ns))
}

func maxOf(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func mean(xs []int64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

func meanF(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// WriteJSON writes the summary, indented, with a final newline: the text
// of json.MarshalIndent(s, "", "  "), written a flow at a time. The flows
// and their feedback are most of a summary of many flows (about 400 and
// 100 bytes each), and marshalling it whole held the text twice over (the
// compact and the indented copy): about 1 GB at a million flows.
func (s *Summary) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	// The summary with one placeholder flow in each list, marshalled
	// whole; each placeholder's text is then replaced by the list's
	// elements, marshalled one by one at the placeholder's indentation.
	c := *s
	var splices []splice
	if len(s.Flows) > 0 {
		c.Flows = []FlowSummary{{Name: placeholder}}
		splices = append(splices, splice{mark: placeholder, n: len(s.Flows), elem: func(i int) any { return &s.Flows[i] }})
	}
	if s.Feedback != nil && len(s.Feedback.Flows) > 0 {
		fb := *s.Feedback
		fb.Flows = []FlowFeedback{{Flow: placeholder}}
		c.Feedback = &fb
		splices = append(splices, splice{mark: placeholder, n: len(s.Feedback.Flows), elem: func(i int) any { return &s.Feedback.Flows[i] }})
	}
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return err
	}
	for _, sp := range splices {
		// The placeholder element: from the '{' that opens it to the '}'
		// that closes it, on lines of their own.
		mark, _ := json.Marshal(sp.mark)
		at := bytes.Index(b, mark)
		open := bytes.LastIndexByte(b[:at], '{')
		line := bytes.LastIndexByte(b[:open], '\n') + 1
		prefix := string(b[line:open])
		end := open + bytes.Index(b[open:], []byte("\n"+prefix+"}")) + len(prefix) + 2
		if _, err := bw.Write(b[:open]); err != nil {
			return err
		}
		for i := range sp.n {
			if i > 0 {
				bw.WriteString(",\n")
				bw.WriteString(prefix)
			}
			e, err := json.MarshalIndent(sp.elem(i), prefix, "  ")
			if err != nil {
				return err
			}
			if _, err := bw.Write(e); err != nil {
				return err
			}
		}
		b = b[end:]
	}
	bw.Write(b)
	bw.WriteByte('\n')
	return bw.Flush()
}

// placeholder names the element WriteJSON replaces: no flow is named so
// (names come from YAML keys and generated names, never a NUL byte).
const placeholder = "\x00summary-placeholder\x00"

// splice is a list WriteJSON writes element by element.
type splice struct {
	mark string
	n    int
	elem func(int) any
}

// WriteFile writes dir/summary.json.
func (s *Summary) WriteFile(dir string) error {
	return writeFile(filepath.Join(dir, "summary.json"), s.WriteJSON)
}
