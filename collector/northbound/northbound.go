// Package northbound is the collector's own gNMI endpoint: one address for
// the whole fleet. It keeps the latest values of every switch the collector
// subscribes to in a gnmi/store tree per target (the store a switch
// serves from), fed by the collector's subscription loops (Observe), and
// serves them through the switch's own code: Capabilities and Get from
// gnmi/service's Handler, Subscribe from gnmi/subscribe, with the
// prefix's target choosing the switch ("*" or empty: all of them). The
// gNMI History extension (gnmi_ext.History) is answered from PostgreSQL
// (history.go), and Set is forwarded to the switch the prefix names, its
// answer returned unchanged.
//
// It must not depend on the rest of collector/ (the command wires it) nor
// on the dataplane: it only knows gNMI, the schema and the database.
package northbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
)

// AllTargets in a prefix's target addresses every switch (so does an
// empty target, for Get and Subscribe).
const AllTargets = "*"

// Dialer returns a connection to the switch named target and the context
// to call it with (its credentials in metadata), for Set forwarding; ok is
// false when the collector does not know the target.
type Dialer func(ctx context.Context, target string) (conn *grpc.ClientConn, callCtx context.Context, ok bool, err error)

type options struct {
	pool    *pgxpool.Pool
	dial    Dialer
	clk     clock.Clock
	log     *slog.Logger
	subOpts []subscribe.Option
	m       *Metrics
	// readHook, if set, runs between History's reads (tests only:
	// export_test.go's WithReadHook).
	readHook func(stage string)
}

// Option configures a Server.
type Option func(*options)

// WithHistory answers the History extension from the collector's database.
// A request before the horizon the database's retention passes recorded
// (not now − db.retention: see retentionHorizon) is OUT_OF_RANGE.
func WithHistory(pool *pgxpool.Pool) Option {
	return func(o *options) { o.pool = pool }
}

// WithDialer forwards Set to the switches through d.
func WithDialer(d Dialer) Option { return func(o *options) { o.dial = d } }

// WithClock sets the clock of SAMPLE and heartbeat timers and of History's
// "now" (default: real time).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithMetrics counts the outcomes of Set in m (NewMetrics); its
// interceptors count the RPCs and the subscriptions.
func WithMetrics(m *Metrics) Option { return func(o *options) { o.m = m } }

// WithSubscribeOptions adds options to every target's subscribe.Server.
func WithSubscribeOptions(opts ...subscribe.Option) Option {
	return func(o *options) { o.subOpts = append(o.subOpts, opts...) }
}

// Server serves the fleet. It implements the handler interfaces of
// gnmi/service (Capabilities, Get, Set, Subscribe).
type Server struct {
	sch  *schema.Schema
	o    options
	caps *service.Handler // Capabilities: the schema's, without a switch

	mu      sync.RWMutex
	targets map[string]*switchView
	watch   map[chan struct{}]struct{} // closed when a target appears
	// retired: removed targets whose subscribe server still serves a
	// stream; goneUpdates: what the others had sent (metrics).
	retired     []*switchView
	goneUpdates uint64
}

// switchView is what the northbound holds of one switch: its latest values
// and the switch's serving code over them.
type switchView struct {
	name string
	st   *store.Store
	get  *service.Handler
	sub  *subscribe.Server
}

// New returns a server with no targets; they appear as Observe sees them.
func New(sch *schema.Schema, opts ...Option) *Server {
	o := options{clk: clock.Real{}, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{sch: sch, o: o, targets: map[string]*switchView{},
		watch: map[chan struct{}]struct{}{}, caps: service.NewHandler(sch, store.New(), nil)}
	if o.m != nil {
		o.m.srv.Store(s)
	}
	// Sets' outcomes without a target start at 0 (a switch's start with
	// it, view): increase() sees the first of each.
	s.setsKnown("", SetNoTarget)
	if o.dial != nil {
		s.setsKnown("", SetUnknownTarget)
	}
	return s
}

// setsKnown serves target's Sets of outcomes at 0 (m may be nil: no
// metrics).
func (s *Server) setsKnown(target string, outcomes ...string) {
	if s.o.m == nil {
		return
	}
	for _, o := range outcomes {
		s.o.m.sets.WithLabelValues(target, o)
	}
}

// view returns the view of a target, creating it.
func (s *Server) view(name string) *switchView {
	s.mu.RLock()
	v := s.targets[name]
	s.mu.RUnlock()
	if v != nil {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v = s.targets[name]; v != nil {
		return v
	}
	st := store.New(store.WithClock(s.o.clk), store.WithSourceTimestamps())
	sch := s.sch
	// A switch's Subscribe options (use_models included), the collector's
	// clock, then the caller's.
	subOpts := append(append([]subscribe.Option{subscribe.WithClock(s.o.clk)}, service.SubscribeOptions(sch)...), s.o.subOpts...)
	v = &switchView{name: name, st: st,
		get: service.NewHandler(sch, st, nil, service.WithHandlerClock(s.o.clk)),
		sub: subscribe.New(st, subOpts...)}
	s.targets[name] = v
	if s.o.dial != nil { // Sets are forwarded to it
		s.setsKnown(name, SetApplied, SetRefused, SetUnreachable)
	}
	for c := range s.watch {
		close(c)
		delete(s.watch, c)
	}
	return v
}

// Targets returns the names of the switches held, sorted.
func (s *Server) Targets() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.targets))
	for n := range s.targets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Store returns the store of a target (nil when unknown): tests and
// benchmarks publish into it as the collector's loops do.
func (s *Server) Store(name string) *store.Store {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if v := s.targets[name]; v != nil {
		return v.st
	}
	return nil
}

// AddTarget makes a target known before its first notification, so that
// requests naming it find it (empty) instead of NOT_FOUND.
func (s *Server) AddTarget(name string) { s.view(name) }

// RemoveTarget drops what the northbound holds of a switch the collector
// stopped collecting (taken out of its configuration or the targets table,
// disabled, or moved to another collector by the leases): its values are
// deleted, so its subscribers get a delete of every path, as from a switch
// whose data is gone, and then it is forgotten: Get, and Subscribe naming
// it, answer NOT_FOUND until it is observed again. Without it a switch's
// last values stayed served until the collector restarted.
func (s *Server) RemoveTarget(name string) {
	s.mu.Lock()
	v := s.targets[name]
	delete(s.targets, name)
	if v != nil {
		s.retired = append(s.retired, v)
	}
	s.mu.Unlock()
	if v == nil {
		return
	}
	var b store.Batch
	b.Delete(&gnmi.Path{})
	if _, err := v.st.Apply(&b, 0); err != nil {
		s.o.log.Debug("northbound: target not cleared", "target", name, "err", err)
	}
}

// Observe applies one response of a target's subscription to its store:
// updates with the notification's timestamp and the leaf's kind from the
// schema (what a switch's publisher gives), deletes as deletes. Timestamps
// pass through unchanged, per leaf (store.WithSourceTimestamps): an update
// older than the one a leaf holds (a switch's initial sync is not in time
// order) is dropped, and no leaf's timestamp moves another's. The
// collector's loop of that target calls it for every response it
// receives, decoded into messages the loop reuses (collector/decode):
// Observe keeps copies of the values, and of nothing else (the store copies
// path elements; decoded paths are never modified). It is safe for
// concurrent use.
func (s *Server) Observe(name string, r *gnmi.SubscribeResponse) {
	n := r.GetUpdate()
	if n == nil {
		return
	}
	v := s.view(name)
	var b store.Batch
	pre := n.GetPrefix().GetElem()
	join := func(p *gnmi.Path) *gnmi.Path {
		if len(pre) == 0 {
			return &gnmi.Path{Elem: p.GetElem()}
		}
		el := make([]*gnmi.PathElem, 0, len(pre)+len(p.GetElem()))
		return &gnmi.Path{Elem: append(append(el, pre...), p.GetElem()...)}
	}
	for _, d := range n.GetDelete() {
		b.Delete(join(d))
	}
	for _, u := range n.GetUpdate() {
		p := join(u.GetPath())
		kind := store.DiscreteState
		if l, ok := s.sch.LeafAt(p); ok {
			kind = l.Kind
		}
		b.Update(p, ownValue(u.GetVal()), kind)
	}
	if b.Len() == 0 {
		return
	}
	if _, err := v.st.Apply(&b, n.GetTimestamp()); err != nil {
		s.o.log.Debug("northbound: notification not stored", "target", name, "err", err)
	}
}

// ownValue copies a typed value the caller may reuse. The scalar kinds a
// switch sends are copied by hand (proto.Clone goes through reflection);
// the others, and JSON and bytes whose buffers are reused, are cloned.
func ownValue(tv *gnmi.TypedValue) *gnmi.TypedValue {
	switch v := tv.GetValue().(type) {
	case *gnmi.TypedValue_UintVal:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v.UintVal}}
	case *gnmi.TypedValue_IntVal:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: v.IntVal}}
	case *gnmi.TypedValue_StringVal:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: v.StringVal}}
	case *gnmi.TypedValue_BoolVal:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: v.BoolVal}}
	case *gnmi.TypedValue_DoubleVal:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: v.DoubleVal}}
	case nil:
		return tv
	}
	return proto.Clone(tv).(*gnmi.TypedValue)
}

// resolveTargets returns the views a prefix target addresses: one by name,
// or all for "*" and "" (all may be none).
func (s *Server) resolveTargets(t string) ([]*switchView, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t == "" || t == AllTargets {
		out := make([]*switchView, 0, len(s.targets))
		for _, v := range s.targets {
			out = append(out, v)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
		return out, nil
	}
	v := s.targets[t]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "target %q: not a switch of this collector (known: %v)", t, s.namesLocked())
	}
	return []*switchView{v}, nil
}

func (s *Server) namesLocked() []string {
	out := make([]string, 0, len(s.targets))
	for n := range s.targets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Capabilities reports the lhcnp models, the encodings and the gNMI
// version, as a switch does.
func (s *Server) Capabilities(ctx context.Context, req *gnmi.CapabilityRequest) (*gnmi.CapabilityResponse, error) {
	return s.caps.Capabilities(ctx, req)
}

// Get answers from the latest values, through each addressed switch's Get
// (gnmi/service) with the prefix's target set to the switch's name: the
// notifications of every switch, in name order. For several switches, one
// without data of the path is left out; NOT_FOUND only when none has any.
func (s *Server) Get(ctx context.Context, req *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	views, err := s.resolveTargets(req.GetPrefix().GetTarget())
	if err != nil {
		return nil, err
	}
	if len(views) == 0 {
		return nil, status.Error(codes.NotFound, "no switch has sent data to this collector yet")
	}
	resp := &gnmi.GetResponse{}
	var notFound error
	for _, v := range views {
		r := getFor(req, v.name)
		one, err := v.get.Get(ctx, r)
		if status.Code(err) == codes.NotFound && len(views) > 1 {
			if notFound == nil {
				notFound = err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		resp.Notification = append(resp.Notification, one.GetNotification()...)
	}
	if len(resp.Notification) == 0 && notFound != nil {
		return nil, notFound
	}
	return resp, nil
}

// getFor copies req with the prefix's target set to name.
func getFor(req *gnmi.GetRequest, name string) *gnmi.GetRequest {
	r := &gnmi.GetRequest{Path: req.GetPath(), Type: req.GetType(), Encoding: req.GetEncoding(),
		UseModels: req.GetUseModels(), Extension: req.GetExtension()}
	p := &gnmi.Path{Target: name}
	if pre := req.GetPrefix(); pre != nil {
		p.Origin, p.Elem, p.Element = pre.GetOrigin(), pre.GetElem(), pre.GetElement() //nolint:staticcheck // passed on for the handler to refuse
	}
	r.Prefix = p
	return r
}

// Set forwards the request, unchanged, to the switch the prefix's target
// names and returns its answer unchanged, errors included (code, message
// and details). The NMS configures through the same endpoint it reads.
//
// The switch sees the collector's own credentials for that target, not
// the northbound user's (the wire carries one identity; the collector is
// trusted to act for its users): each Set is logged here with the
// northbound user who made it (auditSet), the record of who changed what.
func (s *Server) Set(ctx context.Context, req *gnmi.SetRequest) (_ *gnmi.SetResponse, err error) {
	t := req.GetPrefix().GetTarget()
	outcome := SetUnimplemented
	done := func(target, o string) { outcome = o; s.o.m.set(target, o) }
	defer func() { s.auditSet(ctx, req, outcome, err) }()
	if t == "" || t == AllTargets {
		done("", SetNoTarget)
		return nil, status.Errorf(codes.InvalidArgument, "set: the prefix's target must name one switch (got %q); known: %v", t, s.Targets())
	}
	if s.o.dial == nil {
		return nil, status.Error(codes.Unimplemented, "set: this collector does not forward Set")
	}
	conn, cctx, ok, err := s.o.dial(ctx, t)
	if !ok {
		done("", SetUnknownTarget)
		return nil, status.Errorf(codes.NotFound, "set: target %q: not a switch of this collector (known: %v)", store.ErrorText(t), s.Targets())
	}
	if err != nil {
		done(t, SetUnreachable)
		return nil, status.Errorf(codes.Unavailable, "set: target %q: %v", t, err)
	}
	resp, err := gnmi.NewGNMIClient(conn).Set(cctx, req)
	if err != nil {
		if _, isStatus := status.FromError(err); !isStatus || errors.Is(err, context.Canceled) {
			done(t, SetUnreachable)
			return nil, status.Errorf(codes.Unavailable, "set: target %q: %v", t, err)
		}
		// A switch that cannot be reached gives UNAVAILABLE from the
		// client's transport too.
		if status.Code(err) == codes.Unavailable {
			done(t, SetUnreachable)
		} else {
			done(t, SetRefused)
		}
		return nil, err
	}
	done(t, SetApplied)
	return resp, nil
}

// auditPaths is how many of a Set's paths its log line names.
const auditPaths = 8

// auditSet logs a Set the northbound was asked to forward: the northbound
// user who made it (auth.FromContext; none without an authenticator), its
// peer, the target, the outcome (a SetApplied... label) and code, the
// number of deletes, replaces and updates and the first auditPaths of
// their paths (each cut as in errors, store.ErrorPath).
func (s *Server) auditSet(ctx context.Context, req *gnmi.SetRequest, outcome string, err error) {
	id, _ := auth.FromContext(ctx)
	from := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	var paths []string
	add := func(op string, p *gnmi.Path) {
		if len(paths) < auditPaths {
			paths = append(paths, op+" "+store.ErrorPath(schema.Join(req.GetPrefix(), p)))
		}
	}
	for _, p := range req.GetDelete() {
		add("delete", p)
	}
	for _, u := range req.GetReplace() {
		add("replace", u.GetPath())
	}
	for _, u := range req.GetUpdate() {
		add("update", u.GetPath())
	}
	if n := len(req.GetDelete()) + len(req.GetReplace()) + len(req.GetUpdate()); n > len(paths) {
		paths = append(paths, fmt.Sprintf("and %d more", n-len(paths)))
	}
	s.o.log.Info("northbound: set", "user", id.User, "peer", from, "target", store.ErrorText(req.GetPrefix().GetTarget()),
		"outcome", outcome, "code", status.Code(err).String(), "deletes", len(req.GetDelete()),
		"replaces", len(req.GetReplace()), "updates", len(req.GetUpdate()), "paths", paths)
}

// Conns caches one client connection per switch address for Set
// forwarding; the command builds a Dialer over it.
type Conns struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn // by target name + address
}

// Get returns the connection for key, opening it with open the first time.
func (c *Conns) Get(key string, open func() (*grpc.ClientConn, error)) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc := c.conns[key]; cc != nil {
		return cc, nil
	}
	cc, err := open()
	if err != nil {
		return nil, err
	}
	if c.conns == nil {
		c.conns = map[string]*grpc.ClientConn{}
	}
	c.conns[key] = cc
	return cc, nil
}

// Close closes every connection.
func (c *Conns) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, cc := range c.conns {
		if err := cc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	c.conns = nil
	return errors.Join(errs...)
}
