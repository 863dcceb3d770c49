package report

// FeedbackInput is what the runner measured about the congestion feedback
// of one sender (docs/results.md defines it). Times are nanoseconds of
// simulated time, -1 when the event did not happen.
type FeedbackInput struct {
	Flow string
	// SignalNs is when the signal that first reduced the sender's rate on
	// the mechanism's own path was generated (a CE mark for DCQCN, a
	// Long-haul CNP leaving a node), ReactionNs when that reduction
	// happened at the sender.
	SignalNs, ReactionNs int64
	// FirstSignalNs is the first congestion signal of any kind generated
	// for the sender, FirstReductionNs its first rate reduction of any
	// cause.
	FirstSignalNs, FirstReductionNs int64
}

// Feedback summarises the feedback latency over the senders.
type Feedback struct {
	// Signal is the kind of signal timed: "ce-mark" (DCQCN: CE mark at a
	// switch, CNP from the receiver) or "long-haul-cnp".
	Signal string `json:"signal"`
	// Senders is how many senders have a latency (got a signal and reduced
	// because of it).
	Senders int `json:"senders"`
	// Latency from the signal to the reduction it caused, over the senders.
	MeanLatencyNs Float `json:"mean_latency_ns"`
	MaxLatencyNs  int64 `json:"max_latency_ns"`
	// Reaction time from the first signal of any kind to the first
	// reduction of any cause, over the senders that have both.
	ReactionSenders int            `json:"reaction_senders"`
	MeanReactionNs  Float          `json:"mean_reaction_ns"`
	MaxReactionNs   int64          `json:"max_reaction_ns"`
	Flows           []FlowFeedback `json:"flows"`
}

// FlowFeedback is one sender's feedback; absent times were not observed.
type FlowFeedback struct {
	Flow             string `json:"flow"`
	SignalNs         *int64 `json:"signal_ns,omitempty"`
	ReactionNs       *int64 `json:"reaction_ns,omitempty"`
	LatencyNs        *int64 `json:"latency_ns,omitempty"`
	FirstSignalNs    *int64 `json:"first_signal_ns,omitempty"`
	FirstReductionNs *int64 `json:"first_reduction_ns,omitempty"`
}

func summarizeFeedback(signal string, in []FeedbackInput) *Feedback {
	if len(in) == 0 {
		return nil
	}
	fb := &Feedback{Signal: signal, Flows: make([]FlowFeedback, 0, len(in))}
	opt := func(v int64) *int64 {
		if v < 0 {
			return nil
		}
		return &v
	}
	var lat, react []float64
	for _, f := range in {
		ff := FlowFeedback{Flow: f.Flow, SignalNs: opt(f.SignalNs), ReactionNs: opt(f.ReactionNs),
			FirstSignalNs: opt(f.FirstSignalNs), FirstReductionNs: opt(f.FirstReductionNs)}
		if f.SignalNs >= 0 && f.ReactionNs >= f.SignalNs {
			l := f.ReactionNs - f.SignalNs
			ff.LatencyNs = &l
			lat = append(lat, float64(l))
			fb.MaxLatencyNs = max(fb.MaxLatencyNs, l)
		}
		if f.FirstSignalNs >= 0 && f.FirstReductionNs >= f.FirstSignalNs {
			r := f.FirstReductionNs - f.FirstSignalNs
			react = append(react, float64(r))
			fb.MaxReactionNs = max(fb.MaxReactionNs, r)
		}
		if ff.SignalNs == nil && ff.ReactionNs == nil && ff.FirstSignalNs == nil && ff.FirstReductionNs == nil {
			continue
		}
		fb.Flows = append(fb.Flows, ff)
	}
	fb.Senders, fb.ReactionSenders = len(lat), len(react)
	if len(lat) > 0 {
		fb.MeanLatencyNs = Float(meanF(lat))
	}
	if len(react) > 0 {
		fb.MeanReactionNs = Float(meanF(react))
	}
	return fb
}
