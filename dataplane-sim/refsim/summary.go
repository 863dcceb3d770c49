package refsim

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
)

// Summary is what one simulator did with one scenario, small enough to
// store: the bottleneck's queue and each flow's throughput through it at a
// coarse step, PFC pause time, drops and FCTs.
type Summary struct {
	Scenario  string `json:"scenario"`
	Simulator string `json:"simulator"`         // "lhcnp" or "reference"
	Source    string `json:"source,omitempty"`  // the reference's repository and commit
	Command   string `json:"command,omitempty"` // the command line that produced it
	StepNs    int64  `json:"step_ns"`
	// QueueBytes is the bottleneck egress queue, time-averaged over each
	// step.
	QueueBytes []float64     `json:"queue_bytes"`
	Flows      []FlowSummary `json:"flows"`
	// PFCPauseNs is the time ports were held by PFC, summed over every
	// port of the network; PFCPauses the PAUSE frames that held them.
	PFCPauseNs int64 `json:"pfc_pause_ns"`
	PFCPauses  int64 `json:"pfc_pauses"`
	Drops      int64 `json:"drops"`
	// FCTP50Ns and FCTP99Ns are over the finite flows that finished.
	FCTP50Ns int64 `json:"fct_p50_ns"`
	FCTP99Ns int64 `json:"fct_p99_ns"`
	// Events and WallSec are the simulator's own cost of the run (one
	// run, this machine): events executed and wall-clock time.
	// BottleneckPackets, the data frames that left the bottleneck, is the
	// work both simulators did alike (the reference does not count its
	// events without a patch).
	Events int64 `json:"events,omitempty"`
	// HostPortQueueNs (fabrics) is the time-weighted distribution of the
	// queues of every switch port towards a host: port-nanoseconds per
	// 1000-byte bin.
	HostPortQueueNs   []float64 `json:"host_port_queue_ns,omitempty"`
	WallSec           float64   `json:"wall_sec"`
	BottleneckPackets int64     `json:"bottleneck_packets"`
}

// FlowSummary is one flow.
type FlowSummary struct {
	Name string `json:"name"`
	// ThroughputBitsPerSec is the flow's frames leaving the bottleneck
	// per step, in bits per second of wire bytes.
	ThroughputBitsPerSec []float64 `json:"throughput_bps"`
	// FCTNs is the flow completion time from its start; 0 when it did not
	// finish (or is long-lived).
	FCTNs int64 `json:"fct_ns"`
	// SizeBytes and IdealNs (fabrics): the flow's size and its FCT alone
	// on its path, each simulator's own (the reference's standalone FCT).
	SizeBytes int64 `json:"size,omitempty"`
	// FirstCutNs is the time from the flow's first data packet to its
	// first DCQCN rate decrease; 0 when it never cut (or, for the
	// reference, when it ran without its rate log).
	FirstCutNs int64 `json:"first_cut_ns,omitempty"`
	IdealNs    int64 `json:"ideal_ns,omitempty"`
}

// ReadSummary reads a Summary written by WriteSummary.
func ReadSummary(path string) (*Summary, error) {
	return readSummary(nil, path)
}

// readSummary is ReadSummary in fsys (nil: the operating system's files).
func readSummary(fsys fs.FS, path string) (*Summary, error) {
	b, err := readFile(fsys, path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// WriteSummary writes s as JSON, queues rounded to whole bytes and rates
// to whole bits per second (what is stored is small and diffs well).
func WriteSummary(path string, s *Summary) error {
	c := *s
	c.QueueBytes = rounded(s.QueueBytes)
	c.HostPortQueueNs = rounded(s.HostPortQueueNs)
	c.Flows = slices.Clone(s.Flows)
	for i := range c.Flows {
		c.Flows[i].ThroughputBitsPerSec = rounded(c.Flows[i].ThroughputBitsPerSec)
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func rounded(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x)
	}
	return out
}

// fctPercentiles sets FCTP50Ns and FCTP99Ns from the finished flows
// (nearest rank).
func (s *Summary) fctPercentiles() {
	var f []int64
	for _, fl := range s.Flows {
		if fl.FCTNs > 0 {
			f = append(f, fl.FCTNs)
		}
	}
	if len(f) == 0 {
		return
	}
	slices.Sort(f)
	rank := func(p float64) int64 { return f[max(0, int(math.Ceil(p*float64(len(f))))-1)] }
	s.FCTP50Ns, s.FCTP99Ns = rank(0.50), rank(0.99)
}

// MeanQueue is the mean of QueueBytes over steps [from, to).
func (s *Summary) MeanQueue(from, to int) float64 { return meanOf(s.QueueBytes, from, to) }

// meanOf is the mean of xs[from:to], to clipped to len(xs); 0 when empty.
func meanOf(xs []float64, from, to int) float64 {
	to = min(to, len(xs))
	if from >= to {
		return 0
	}
	var sum float64
	for _, x := range xs[from:to] {
		sum += x
	}
	return sum / float64(to-from)
}

// Flow returns the named flow, or nil.
func (s *Summary) Flow(name string) *FlowSummary {
	for i := range s.Flows {
		if s.Flows[i].Name == name {
			return &s.Flows[i]
		}
	}
	return nil
}

// MeanThroughput is the mean of a flow's throughput over steps [from, to).
func (f *FlowSummary) MeanThroughput(from, to int) float64 {
	return meanOf(f.ThroughputBitsPerSec, from, to)
}

// series accumulates a piecewise-constant value (a queue) and per-key byte
// counts into steps.
type series struct {
	step    int64
	n       int
	area    []float64 // value x ns per step
	lastT   int64
	lastV   float64
	bytes   map[string][]float64
	packets int64
	endNs   int64
	started bool
}

func newSeries(stepNs, endNs int64) *series {
	n := int((endNs + stepNs - 1) / stepNs)
	return &series{step: stepNs, n: n, area: make([]float64, n), bytes: map[string][]float64{}, endNs: endNs}
}

// set records that the value became v at time t (t never decreasing).
func (s *series) set(t int64, v float64) {
	s.advance(t)
	s.lastV = v
}

func (s *series) advance(t int64) {
	t = min(t, s.endNs)
	for s.lastT < t {
		i := int(s.lastT / s.step)
		end := min(int64(i+1)*s.step, t)
		s.area[i] += s.lastV * float64(end-s.lastT)
		s.lastT = end
	}
}

func (s *series) add(key string, t int64, n int64) {
	if t >= s.endNs {
		return
	}
	b := s.bytes[key]
	if b == nil {
		b = make([]float64, s.n)
		s.bytes[key] = b
	}
	b[t/s.step] += float64(n)
	s.packets++
}

// finish closes the series at the end and returns the time-averaged value
// per step and bits per second per key.
func (s *series) finish() ([]float64, map[string][]float64) {
	s.advance(s.endNs)
	q := make([]float64, s.n)
	for i := range q {
		q[i] = s.area[i] / float64(s.step)
	}
	r := map[string][]float64{}
	for k, b := range s.bytes {
		v := make([]float64, s.n)
		for i := range b {
			v[i] = b[i] * 8 / (float64(s.step) / 1e9)
		}
		r[k] = v
	}
	return q, r
}
