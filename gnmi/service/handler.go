package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygot/ygot"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Dataplane is what the target programs: one switch's congestion-aware node.
// server/dataplane binds the simulator's node; tests use fakes.
type Dataplane interface {
	// ApplyConfig validates the whole intended configuration, translates
	// it and applies it atomically: when it returns an error the dataplane
	// runs exactly as before. An error that wraps ErrInvalidConfig is the
	// configuration's fault (INVALID_ARGUMENT); any other is the
	// dataplane's (INTERNAL, or the context's code).
	ApplyConfig(ctx context.Context, intended *oc.Lhcnp_Lhcnp) error
}

// A KeepingDataplane applies a configuration and has it kept (the
// startup configuration written, keep) as one step: keep runs once the
// dataplane has taken the configuration, and if it fails the dataplane is
// set back at once, as when it refuses a configuration, and the error
// returned wraps keep's. The Handler uses it, when its Dataplane offers
// it, for a durable configuration with a Persister (WithPersister):
// setting back with ApplyConfig afterwards would not leave the dataplane
// as it was (a change and the change back counted, timers re-armed). The
// dataplane does not add ErrInvalidConfig to keep's error. keep runs with
// the dataplane held (the Set's lock, and in server/dataplane the engine's
// step: a paced engine waits for it, its fsync included): it must not call
// back into the dataplane (Snapshot, ApplyConfig), which would deadlock. A
// Dataplane wrapped in another type offers it only if the wrapper does.
type KeepingDataplane interface {
	Dataplane
	ApplyConfigThen(ctx context.Context, intended *oc.Lhcnp_Lhcnp, keep func() error) error
}

// StatePublisher writes the dataplane's state into the store. The target
// calls PublishNow after every commit, so that a Get right after a Set sees
// the applied values (config/x and state/x agree, effective-* recomputed).
type StatePublisher interface {
	PublishNow(ctx context.Context) error
}

// ErrInvalidConfig is wrapped by Dataplane errors that reject the
// configuration itself.
var ErrInvalidConfig = errors.New("invalid configuration")

// Persister keeps the startup configuration: the configuration a switch
// was last committed with, which it starts from after a restart. The
// Handler calls Persist, with its lock held, whenever a configuration
// becomes durable: a Set, a Load, a confirmed commit (never a commit
// still waiting for confirmation: a restart then rolls it back, as its
// timer would). config is JSON_IETF of the configuration tree as it was
// set, as LoadJSON reads it back (a Get of "/" with type CONFIG returns it
// with the YANG defaults in use filled in: schema.ConfigInUse).
//
// When Persist returns nil the configuration must survive a crash; when
// it returns an error the previous one must still be there: the Handler
// then fails the Set (INTERNAL) and puts the dataplane back (as it was
// with a KeepingDataplane, which calls Persist between two events). server/
// implements it with a file; this package does no file I/O.
type Persister interface {
	Persist(ctx context.Context, config []byte) error
}

type handlerOptions struct {
	pub     StatePublisher
	persist Persister
	clk     clock.Clock
	log     *slog.Logger
	onEvent func(CommitEvent)
}

// WithPersister keeps every durable configuration with p (default: none,
// a restart starts from the initial configuration).
func WithPersister(p Persister) HandlerOption { return func(o *handlerOptions) { o.persist = p } }

// WithLogger sets the logger of events no RPC reports, such as an automatic
// rollback (default: none).
func WithLogger(l *slog.Logger) HandlerOption { return func(o *handlerOptions) { o.log = l } }

// WithCommitObserver calls f on every commit-confirmed event, with h.mu
// held: f must not call the Handler.
func WithCommitObserver(f func(CommitEvent)) HandlerOption {
	return func(o *handlerOptions) { o.onEvent = f }
}

// HandlerOption configures a Handler.
type HandlerOption func(*handlerOptions)

// WithStatePublisher sets the publisher run after each commit.
func WithStatePublisher(p StatePublisher) HandlerOption {
	return func(o *handlerOptions) { o.pub = p }
}

// WithHandlerClock sets the clock of response timestamps when nothing was
// published (default: real time).
func WithHandlerClock(c clock.Clock) HandlerOption { return func(o *handlerOptions) { o.clk = c } }

// Handler serves Capabilities, Get and Set for one switch: the intended
// configuration is an *oc.Root (config containers only), Set changes it as
// a transaction and applies it to the Dataplane, and Get reads the store,
// where config is published on commit (what was set and the YANG defaults
// in use: schema.ConfigInUse) and state by the StatePublisher.
type Handler struct {
	s   *schema.Schema
	st  *store.Store
	dp  Dataplane
	o   handlerOptions
	ver string

	mu        sync.Mutex // serialises Set and Load
	intended  *oc.Root
	published map[string]*gnmi.Path // config leaves in the store, defaults included, by PathString
	pending   *pendingCommit        // the commit waiting for confirmation (gnmi_ext.Commit)
	expired   expiredCommit         // the last commit rolled back by its timer
}

// NewHandler returns a handler with an empty intended configuration; call
// Load to apply the initial one.
func NewHandler(s *schema.Schema, st *store.Store, dp Dataplane, opts ...HandlerOption) *Handler {
	o := handlerOptions{clk: clock.Real{}, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	return &Handler{s: s, st: st, dp: dp, o: o, ver: gnmiVersion(),
		intended: &oc.Root{}, published: map[string]*gnmi.Path{}}
}

// gnmiVersion is the gnmi_service option of the gnmi.proto we are built
// with ("0.10.0" for openconfig/gnmi v0.14.1).
func gnmiVersion() string {
	opts := gnmi.File_github_com_openconfig_gnmi_proto_gnmi_gnmi_proto.Options()
	if v, ok := proto.GetExtension(opts, gnmi.E_GnmiService).(string); ok && v != "" {
		return v
	}
	return "0.10.0"
}

// Intended returns a copy of the intended configuration.
func (h *Handler) Intended() (*oc.Root, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := ygot.DeepCopy(h.intended)
	if err != nil {
		return nil, err
	}
	return c.(*oc.Root), nil
}

// Load replaces the intended configuration with root (as a Set replacing
// "/" would): checked, applied to the dataplane, published and persisted
// (WithPersister). It is how the initial or startup configuration of a
// switch is applied.
func (h *Handler) Load(ctx context.Context, root *oc.Root) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := ygot.DeepCopy(root)
	if err != nil {
		return err
	}
	cand := c.(*oc.Root)
	if _, err := h.commit(ctx, cand, true); err != nil {
		// ygot names the schema node, without keys: the data node
		// that fails names the entry, as in a Set's error.
		if ve, ok := errors.AsType[*validationError](err.err); ok {
			return ve.named(h.locate(cand, ve.path, nil), nil)
		}
		// Of the rules it breaks, the first in path order: the file's
		// error is placed at one member (startup.Locate).
		if rules := ruleErrors(err.err); len(rules) > 0 {
			return rules[0]
		}
		return err.err
	}
	return nil
}

// LoadJSON is Load from a JSON document of the root: RFC 7951 (what a Get
// of "/" in JSON_IETF returns, and what a Persister is given) or plain
// JSON, in the forms Set accepts (schema.DecodeValue); errors name the
// YANG path.
func (h *Handler) LoadJSON(ctx context.Context, data []byte) error {
	ietf, err := schema.DecodeJSON(h.s.Root(), data)
	if err != nil {
		return err
	}
	root := &oc.Root{}
	if err := oc.Unmarshal(ietf, root); err != nil {
		return err
	}
	return h.Load(ctx, root)
}

// persist hands root to the Persister, if any, as JSON_IETF (indented, so
// that the file an operator opens reads). h.mu is held.
func (h *Handler) persist(ctx context.Context, root *oc.Root) error {
	if h.o.persist == nil {
		return nil
	}
	tv, err := h.s.EncodeNode(root, &gnmi.Path{}, gnmi.Encoding_JSON_IETF)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, tv.GetJsonIetfVal(), "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	return h.o.persist.Persist(ctx, b.Bytes())
}

// Capabilities reports our modules, encodings and gNMI version (gNMI 3.2).
func (h *Handler) Capabilities(ctx context.Context, req *gnmi.CapabilityRequest) (*gnmi.CapabilityResponse, error) {
	return &gnmi.CapabilityResponse{
		SupportedModels:    schema.Models(),
		SupportedEncodings: schema.Encodings(),
		GNMIVersion:        h.ver,
	}, nil
}

// opError is a failed transaction: the gRPC code and message, and the index
// of the operation at fault (-1 when the whole candidate is); more are
// the candidate's other faults (rules it breaks in other entries), each
// with its operation, and unnamed the count of those beyond.
type opError struct {
	code    codes.Code
	op      int
	err     error
	more    []*opError
	unnamed int
}

func (e *opError) status(req *gnmi.SetRequest, ops []setOp) error {
	all := append([]*opError{e}, e.more...)
	msgs := make([]string, 0, len(all)+1)
	var together []string // of the faults no one operation is blamed for
	for _, f := range all {
		msgs = append(msgs, f.err.Error())
		if f.op < 0 {
			together = append(together, f.err.Error())
		}
	}
	if e.unnamed > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", e.unnamed))
	}
	st := status.New(e.code, strings.Join(msgs, "; "))
	// Details: one UpdateResult per operation, each failed one with its
	// errors and the others ABORTED (gNMI 3.4.7); of a fault no one is
	// blamed for (op -1), every other one ABORTED saying why.
	resp := &gnmi.SetResponse{Prefix: req.GetPrefix()}
	aborted := "aborted: another operation failed"
	if len(together) > 0 {
		aborted = "aborted: the operations failed together, none alone: " + strings.Join(together, "; ")
	}
	for i, o := range ops {
		r := &gnmi.UpdateResult{Path: o.path, Op: o.kind, Message: &gnmi.Error{Code: uint32(codes.Aborted), Message: aborted}}
		var own []string
		for _, f := range all {
			if f.op == i {
				own = append(own, f.err.Error())
			}
		}
		if len(own) > 0 {
			r.Message = &gnmi.Error{Code: uint32(e.code), Message: strings.Join(own, "; ")}
		}
		resp.Response = append(resp.Response, r)
	}
	if d, err := st.WithDetails(resp); err == nil {
		st = d
	}
	return st.Err()
}
