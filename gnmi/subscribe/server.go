// Package subscribe serves the gNMI Subscribe RPC from a store.Store: ONCE,
// POLL and STREAM lists; SAMPLE (sample_interval, suppress_redundant,
// heartbeat_interval), ON_CHANGE (with heartbeats) and TARGET_DEFINED
// subscriptions; updates_only; a sync_response after the initial data in
// every mode; deletes when leaves vanish (POLL: in the next poll's answer).
//
// Each stream has one sending goroutine and a coalescing queue keyed by leaf:
// publishers only insert into it, so a stalled subscriber holds at most one
// pending value per leaf and never slows the publisher or other streams.
// Identical ON_CHANGE streams share one store watch and send the same
// pre-encoded notifications (share.go); notifications are written to
// protobuf wire form directly (wire.go).
// SAMPLE and heartbeat timers come from a clock.Clock, so tests drive time.
//
// It must not depend on the schema (gen/) or the dataplane; value encodings
// that need the schema plug in through WithEncoder.
package subscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Defaults of the options.
const (
	DefaultMinSampleInterval     = 10 * time.Millisecond
	DefaultTargetDefinedInterval = 10 * time.Second
	DefaultMaxUpdates            = 500
)

type options struct {
	clk            clock.Clock
	minSample      time.Duration
	targetDefined  time.Duration
	maxUpdates     int
	encoders       map[gnmi.Encoding]ValueEncoder
	allowedOrigins map[string]bool
	rewrite        func(*gnmi.Path) *gnmi.Path
	validate       func(*gnmi.Path) error
	models         func([]*gnmi.ModelData) error
}

// Option configures a Server.
type Option func(*options)

// WithClock sets the clock of SAMPLE and heartbeat timers (default: real time).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// WithMinSampleInterval sets the smallest sample_interval and
// heartbeat_interval accepted; smaller non-zero values are INVALID_ARGUMENT.
// It is also the interval of a SAMPLE subscription whose sample_interval is
// 0, which gNMI 3.5.1.5.2 says is "the lowest interval possible for the
// target": a target whose store changes only every publish interval passes
// that interval, since sampling faster would only repeat values.
func WithMinSampleInterval(d time.Duration) Option { return func(o *options) { o.minSample = d } }

// WithTargetDefinedInterval sets the interval at which TARGET_DEFINED samples
// counters and gauges.
func WithTargetDefinedInterval(d time.Duration) Option {
	return func(o *options) { o.targetDefined = d }
}

// WithMaxUpdatesPerNotification caps the updates grouped into one
// notification (leaves with the same timestamp share one). 1 sends one
// notification per leaf, like openconfig/gnmi's subscribe package.
func WithMaxUpdatesPerNotification(n int) Option { return func(o *options) { o.maxUpdates = n } }

// WithEncoder sets the value encoder of an encoding, adding the encoding to
// the supported ones. Defaults: PROTO, JSON and JSON_IETF (provisional).
func WithEncoder(e gnmi.Encoding, enc ValueEncoder) Option {
	return func(o *options) { o.encoders[e] = enc }
}

// WithOrigins sets the origins accepted in paths besides "" (default:
// "openconfig").
func WithOrigins(origins ...string) Option {
	return func(o *options) {
		o.allowedOrigins = map[string]bool{"": true}
		for _, s := range origins {
			o.allowedOrigins[s] = true
		}
	}
}

// WithPathRewrite rewrites the prefix and every subscription path before
// they are used (a target with a schema strips module qualifiers from
// element names, "lhcnp:lhcnp" → "lhcnp"). f must not modify its argument.
func WithPathRewrite(f func(*gnmi.Path) *gnmi.Path) Option {
	return func(o *options) { o.rewrite = f }
}

// WithPathValidator checks every subscription's full path (prefix and path
// joined, after WithPathRewrite); an error is INVALID_ARGUMENT naming the
// path. Without it any path is accepted (data arrives when it appears).
func WithPathValidator(f func(*gnmi.Path) error) Option {
	return func(o *options) { o.validate = f }
}

// WithModelValidator checks a subscription list's use_models; an error is
// INVALID_ARGUMENT with its message (gNMI 2.6, 3.5.1.2: the target must only
// consider data of the models named, so a model it does not serve cannot be
// answered). Without it use_models is ignored. A target with a schema passes
// the check its Get makes, so both refuse the same lists.
func WithModelValidator(f func([]*gnmi.ModelData) error) Option {
	return func(o *options) { o.models = f }
}

// Stats are a Server's counters since it started.
type Stats struct {
	ActiveStreams uint64
	Streams       uint64 // accepted Subscribe RPCs
	Notifications uint64 // notifications sent
	Updates       uint64 // updates and deletes sent
	Coalesced     uint64 // values replaced in a queue before being sent
}

// Server serves Subscribe from a store. Its Subscribe method has the
// signature of gnmi.GNMIServer's, so a gNMI service can delegate to it.
type Server struct {
	st    *store.Store
	o     options
	hub   hub
	stats struct {
		active, streams, notifications, updates, coalesced atomic.Uint64
	}
	mu   sync.Mutex
	live liveStreams // the streams being served, for Streams
}

// liveStreams are the streams being served, by ID.
type liveStreams map[uint64]*stream

// StreamInfo describes one Subscribe stream being served (metrics).
type StreamInfo struct {
	ID   uint64 // in order of arrival, from 1
	Peer string // the client's address
	Mode gnmi.SubscriptionList_Mode
	// Queued is how many values wait to be sent to the client: its own
	// coalescing queue, what the sender took from it and has not sent
	// yet, and, for a stream in a shared fan-out, the updates of the
	// group's log it has not taken.
	Queued int
}

// Streams describes the streams being served, by ID.
func (s *Server) Streams() []StreamInfo {
	s.mu.Lock()
	live := make([]*stream, 0, len(s.live))
	for _, st := range s.live {
		live = append(live, st)
	}
	s.mu.Unlock()
	out := make([]StreamInfo, 0, len(live))
	for _, st := range live {
		st.q.mu.Lock()
		n := len(st.q.items)
		st.q.mu.Unlock()
		n += int(max(0, st.inFlight.Load()))
		if m := st.shared.Load(); m != nil {
			m.g.mu.Lock()
			n += m.pending
			for _, r := range m.backlog {
				n += len(r.entries)
			}
			m.g.mu.Unlock()
		}
		out = append(out, StreamInfo{ID: st.id, Peer: st.peer, Mode: st.mode, Queued: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// New returns a Server over st.
func New(st *store.Store, opts ...Option) *Server {
	o := options{
		clk:            clock.Real{},
		minSample:      DefaultMinSampleInterval,
		targetDefined:  DefaultTargetDefinedInterval,
		maxUpdates:     DefaultMaxUpdates,
		allowedOrigins: map[string]bool{"": true, "openconfig": true},
		encoders: map[gnmi.Encoding]ValueEncoder{
			gnmi.Encoding_PROTO:     ProtoEncoder,
			gnmi.Encoding_JSON:      JSONEncoder,
			gnmi.Encoding_JSON_IETF: IETFEncoder,
		},
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxUpdates < 1 {
		o.maxUpdates = 1
	}
	return &Server{st: st, o: o}
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		ActiveStreams: s.stats.active.Load(),
		Streams:       s.stats.streams.Load(),
		Notifications: s.stats.notifications.Load(),
		Updates:       s.stats.updates.Load(),
		Coalesced:     s.stats.coalesced.Load(),
	}
}

// Subscribe serves one Subscribe RPC.
func (s *Server) Subscribe(stream gnmi.GNMI_SubscribeServer) error {
	s.stats.active.Add(1)
	defer s.stats.active.Add(^uint64(0))

	req, err := stream.Recv()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return err
	case req.GetSubscribe() == nil:
		return status.Error(codes.InvalidArgument, "the first message must be a subscription list")
	}
	st, err := s.newStream(stream, req.GetSubscribe())
	if err != nil {
		return err
	}
	st.id = s.stats.streams.Add(1)
	if p, ok := peer.FromContext(stream.Context()); ok && p.Addr != nil {
		st.peer = p.Addr.String()
	}
	s.mu.Lock()
	if s.live == nil {
		s.live = make(liveStreams)
	}
	s.live[st.id] = st
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.live, st.id)
		s.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	sendErr := make(chan error, 1)
	go func() { sendErr <- st.run(ctx) }()
	recvErr := make(chan error, 1)
	go func() { recvErr <- st.receive(ctx) }()
	select {
	case err := <-sendErr:
		return err
	case err := <-recvErr:
		if err == nil {
			// The client closed its side; keep serving until the sender ends
			// (ONCE done) or the client cancels.
			return <-sendErr
		}
		cancel()
		<-sendErr
		return err
	}
}

// receive reads the messages after the subscription list: polls (POLL mode
// only) go to the sender, one at a time, so a client that polls faster than
// it reads is held back by flow control instead of growing a queue.
func (st *stream) receive(ctx context.Context) error {
	for {
		req, err := st.rpc.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case req.GetPoll() != nil && st.mode == gnmi.SubscriptionList_POLL:
			select {
			case st.pollC <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
		case req.GetPoll() != nil:
			return status.Errorf(codes.InvalidArgument, "poll request on a %v subscription", st.mode)
		case req.GetSubscribe() != nil:
			return status.Error(codes.InvalidArgument, "a subscription list was already received on this stream")
		default:
			return status.Error(codes.InvalidArgument, "unknown subscribe request")
		}
	}
}

// newStream validates a subscription list into a stream. Every error is a
// status naming the offending field or path.
func (s *Server) newStream(rpc gnmi.GNMI_SubscribeServer, sl *gnmi.SubscriptionList) (*stream, error) {
	switch sl.GetMode() {
	case gnmi.SubscriptionList_STREAM, gnmi.SubscriptionList_ONCE, gnmi.SubscriptionList_POLL:
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unknown subscription list mode %d", sl.GetMode())
	}
	if _, known := gnmi.Encoding_name[int32(sl.GetEncoding())]; !known {
		return nil, status.Errorf(codes.InvalidArgument, "unknown encoding %d", sl.GetEncoding())
	}
	enc, ok := s.o.encoders[sl.GetEncoding()]
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "encoding %v is not supported", sl.GetEncoding())
	}
	if len(sl.GetSubscription()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "the subscription list has no subscriptions")
	}
	if s.o.models != nil {
		if err := s.o.models(sl.GetUseModels()); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	prefix := sl.GetPrefix()
	if s.o.rewrite != nil && prefix != nil {
		prefix = s.o.rewrite(prefix)
	}
	if !s.o.allowedOrigins[prefix.GetOrigin()] {
		return nil, status.Errorf(codes.InvalidArgument, "prefix %s: %s", store.ErrorPath(prefix), s.notServed(prefix.GetOrigin()))
	}
	if prefix.GetOrigin() != "" {
		for _, sub := range sl.GetSubscription() {
			if sub.GetPath().GetOrigin() != "" {
				return nil, status.Errorf(codes.InvalidArgument, "path %s: origin set in both the prefix and the path", store.ErrorPath(joinElems(prefix, sub.GetPath())))
			}
		}
	}
	st := &stream{
		srv:      s,
		rpc:      rpc,
		mode:     sl.GetMode(),
		enc:      enc,
		q:        newQueue(),
		pollC:    make(chan struct{}, 1),
		updOnly:  sl.GetUpdatesOnly(),
		bare:     bareprefix(prefix),
		maxBatch: s.o.maxUpdates,
		encoding: sl.GetEncoding(),
	}
	st.codec, st.raw = transportOf(rpc)
	if _, err := store.NewPattern(prefix, nil); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "prefix %s: %s", store.ErrorPath(prefix), patternReason(err))
	}
	for _, sub := range sl.GetSubscription() {
		su, err := s.newSub(st, prefix, sub)
		if err != nil {
			return nil, err
		}
		st.subs = append(st.subs, su)
	}
	return st, nil
}

// bareprefix keeps only the target and origin of a request prefix, for
// notifications whose paths are full.
func bareprefix(p *gnmi.Path) *gnmi.Path {
	if p.GetTarget() == "" && p.GetOrigin() == "" {
		return nil
	}
	return &gnmi.Path{Target: p.GetTarget(), Origin: p.GetOrigin()}
}

// joinElems is prefix's elements followed by p's: the path of the tree a
// subscription names.
func joinElems(prefix, p *gnmi.Path) *gnmi.Path {
	return &gnmi.Path{Elem: append(append([]*gnmi.PathElem(nil), prefix.GetElem()...), p.GetElem()...)}
}

// notServed says an origin is not accepted and which are, in the words of
// Get's and Set's (schema.CheckOrigin): `origin "x" is not served (use
// "lhcnp", "openconfig" or none)`.
func (s *Server) notServed(origin string) string {
	var use []string
	for o := range s.o.allowedOrigins {
		if o != "" {
			use = append(use, strconv.Quote(store.ErrorText(o)))
		}
	}
	sort.Strings(use)
	if len(use) == 0 {
		return fmt.Sprintf("origin %q is not served (use none)", store.ErrorText(origin))
	}
	return fmt.Sprintf("origin %q is not served (use %s or none)", store.ErrorText(origin), strings.Join(use, ", "))
}

// errorPath names prefix and p joined in an error; a path given only in the
// deprecated element field (which NewPattern refuses) is named by it, as
// store.ErrorPath names one.
func errorPath(prefix, p *gnmi.Path) string {
	return store.ErrorPath(joinElems(byElem(prefix), byElem(p)))
}

// byElem is p, or its deprecated element field as elems when it has only that.
func byElem(p *gnmi.Path) *gnmi.Path {
	if len(p.GetElem()) > 0 || len(p.GetElement()) == 0 {
		return p
	}
	out := &gnmi.Path{Elem: make([]*gnmi.PathElem, len(p.GetElement()))}
	for i, n := range p.GetElement() {
		out.Elem[i] = &gnmi.PathElem{Name: n}
	}
	return out
}

// patternReason is why store.NewPattern refused a path, without the path,
// which the message names already.
func patternReason(err error) string {
	if pe, ok := errors.AsType[*store.PatternError](err); ok {
		return pe.Why()
	}
	return err.Error()
}

func (s *Server) newSub(st *stream, prefix *gnmi.Path, req *gnmi.Subscription) (*sub, error) {
	name := store.PathString(req.GetPath())
	// Errors name the whole path, prefix and path, as Get's and Set's do
	// (docs/gnmi.md, "Errors"): under a prefix the path alone is no path of
	// the tree. ErrorPath: the path may be megabytes.
	if !s.o.allowedOrigins[req.GetPath().GetOrigin()] {
		return nil, status.Errorf(codes.InvalidArgument, "path %s: %s", errorPath(prefix, req.GetPath()), s.notServed(req.GetPath().GetOrigin()))
	}
	path := req.GetPath()
	if s.o.rewrite != nil && path != nil {
		path = s.o.rewrite(path)
	}
	full := joinElems(prefix, path)
	errName := errorPath(prefix, path)
	pat, err := store.NewPattern(prefix, path)
	if err != nil {
		// The prefix passed on its own: the path is at fault.
		return nil, status.Errorf(codes.InvalidArgument, "path %s: %s", errName, patternReason(err))
	}
	if s.o.validate != nil {
		if err := s.o.validate(full); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: %v", errName, err)
		}
	}
	su := &sub{pat: pat, name: name}
	sample, heartbeat := time.Duration(req.GetSampleInterval()), time.Duration(req.GetHeartbeatInterval())
	switch st.mode {
	case gnmi.SubscriptionList_ONCE:
		// ONCE sends the current values and ends; an interval has no meaning,
		// and gNMI 3.5.1.3 offers the Subscription's parameters to POLL and
		// STREAM only.
		if sample != 0 {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: sample_interval is not allowed in %v mode", errName, st.mode)
		}
		if heartbeat != 0 {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: heartbeat_interval is not allowed in %v mode", errName, st.mode)
		}
		su.initial = anyKind
		return su, nil
	case gnmi.SubscriptionList_POLL:
		// gNMI 3.5.1.3 lets a POLL subscription carry the parameters (a
		// client may fill them in whatever the mode); a poll sends the
		// current values when asked, so the intervals are ignored.
		su.initial = anyKind
		return su, nil
	}
	if heartbeat != 0 && heartbeat < s.o.minSample {
		return nil, status.Errorf(codes.InvalidArgument, "path %s: heartbeat_interval %v is below the minimum %v", errName, heartbeat, s.o.minSample)
	}
	switch req.GetMode() {
	case gnmi.SubscriptionMode_ON_CHANGE:
		if sample != 0 {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: sample_interval is not allowed in ON_CHANGE mode", errName)
		}
		su.onChange, su.heartbeat = anyKind, heartbeat
	case gnmi.SubscriptionMode_SAMPLE:
		if sample == 0 {
			sample = s.o.minSample // 3.5.1.5.2: the lowest interval possible
		}
		if sample < s.o.minSample {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: sample_interval %v is below the minimum %v", errName, sample, s.o.minSample)
		}
		su.sampled, su.interval = anyKind, sample
		su.suppress = req.GetSuppressRedundant()
		if su.suppress {
			su.heartbeat = heartbeat
			su.sent = map[string]sentInfo{}
		}
	case gnmi.SubscriptionMode_TARGET_DEFINED:
		if sample != 0 {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: sample_interval is not allowed in TARGET_DEFINED mode", errName)
		}
		su.onChange, su.sampled = notSampledKind, sampledKind
		su.interval, su.heartbeat = s.o.targetDefined, heartbeat
		su.suppress = req.GetSuppressRedundant()
		if su.suppress {
			su.sent = map[string]sentInfo{}
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "path %s: unknown subscription mode %d", errName, req.GetMode())
	}
	su.initial = anyKind // every mode covers every kind of leaf, some by change, some by sample
	return su, nil
}

type kindFilter func(store.Kind) bool

func anyKind(store.Kind) bool          { return true }
func sampledKind(k store.Kind) bool    { return k.Sampled() }
func notSampledKind(k store.Kind) bool { return !k.Sampled() }
