// Package target assembles the gNMI target's gRPC server: transport security
// (TLS or an explicit insecure mode), the auth interceptors, message limits,
// and one gnmi.GNMIServer whose RPCs delegate to handlers, each given by its
// own option: Subscribe from gnmi/subscribe, Capabilities, Get and Set
// from this package's schema-bound Handler (NewHandler). An RPC without a
// handler is UNIMPLEMENTED (a server that only streams, as the collector's
// test switches, has Subscribe alone).
package service

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// DefaultMaxRecvMsgSize is the largest request accepted (gRPC's default);
// a larger one is RESOURCE_EXHAUSTED.
const DefaultMaxRecvMsgSize = 4 << 20

// Bounds on what one connection holds, before it authenticates or at all;
// WithGRPCOptions overrides them.
const (
	// DefaultMaxConcurrentStreams is the most RPCs one connection may have
	// open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS): gRPC's default
	// is no limit, so one connection could open streams, each with its
	// goroutine and buffers, without end. A gRPC client queues an RPC
	// over the limit until one ends.
	DefaultMaxConcurrentStreams = 128
	// DefaultHandshakeTimeout bounds a new connection's TLS handshake and
	// HTTP/2 preface: gRPC's default, 120 s, let a client that opens
	// connections and says nothing hold each, goroutine and descriptor,
	// for two minutes.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultKeepaliveTime and DefaultKeepaliveTimeout: a connection the
	// server has read nothing from for DefaultKeepaliveTime is pinged, and
	// closed if the ping is not answered within DefaultKeepaliveTimeout
	// (the TCP user timeout too). gRPC's default is 2 h: a subscriber whose
	// host died without closing held its streams, and with them its
	// user's stream limit, for two hours.
	DefaultKeepaliveTime    = time.Minute
	DefaultKeepaliveTimeout = 20 * time.Second
	// DefaultMaxConnectionIdle closes (GOAWAY) a connection with no RPC
	// open for this long; a gRPC client reconnects at its next RPC.
	// gRPC's default is never.
	DefaultMaxConnectionIdle = 15 * time.Minute
	// DefaultKeepaliveMinTime is the shortest interval a client's
	// keepalive pings may have, with or without an RPC open; a client that
	// pings more often is sent GOAWAY ENHANCE_YOUR_CALM ("too_many_pings").
	// gRPC's default is 5 min and no ping without an RPC, which sends
	// GOAWAY to a client that checks the server is alive (grpc-go clients
	// may ping every 10 s).
	DefaultKeepaliveMinTime = 5 * time.Second
)

// The handler interfaces, one per RPC, so each can come from its own package.
type (
	CapabilitiesHandler interface {
		Capabilities(context.Context, *gnmi.CapabilityRequest) (*gnmi.CapabilityResponse, error)
	}
	GetHandler interface {
		Get(context.Context, *gnmi.GetRequest) (*gnmi.GetResponse, error)
	}
	SetHandler interface {
		Set(context.Context, *gnmi.SetRequest) (*gnmi.SetResponse, error)
	}
	SubscribeHandler interface {
		Subscribe(gnmi.GNMI_SubscribeServer) error
	}
)

type options struct {
	tls        *tls.Config
	insecure   bool
	auth       *auth.Authenticator
	maxRecv    int
	maxConnRPC uint32
	caps       CapabilitiesHandler
	get        GetHandler
	set        SetHandler
	sub        SubscribeHandler
	grpcOpts   []grpc.ServerOption
	unaryInts  []grpc.UnaryServerInterceptor
	streamInts []grpc.StreamServerInterceptor
	unaryOut   []grpc.UnaryServerInterceptor
	streamOut  []grpc.StreamServerInterceptor
}

// Option configures a Server.
type Option func(*options)

// WithTLS serves over TLS with cfg (see auth.ServerTLS).
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithInsecure serves plaintext; it must be asked for explicitly (labs).
func WithInsecure() Option { return func(o *options) { o.insecure = true } }

// WithAuth installs the authenticator's interceptors.
func WithAuth(a *auth.Authenticator) Option { return func(o *options) { o.auth = a } }

// WithMaxRecvMsgSize sets the largest request in bytes.
func WithMaxRecvMsgSize(n int) Option { return func(o *options) { o.maxRecv = n } }

// WithMaxConcurrentStreams sets how many RPCs one connection may have open
// at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; default
// DefaultMaxConcurrentStreams, also for 0: gRPC takes 0 for no limit).
func WithMaxConcurrentStreams(n uint32) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConnRPC = n
		}
	}
}

// WithCapabilities, WithGet, WithSet and WithSubscribe set the RPC handlers.
func WithCapabilities(h CapabilitiesHandler) Option { return func(o *options) { o.caps = h } }

// WithGet sets the Get handler.
func WithGet(h GetHandler) Option { return func(o *options) { o.get = h } }

// WithSet sets the Set handler.
func WithSet(h SetHandler) Option { return func(o *options) { o.set = h } }

// WithSubscribe sets the Subscribe handler (a *subscribe.Server).
func WithSubscribe(h SubscribeHandler) Option { return func(o *options) { o.sub = h } }

// WithInterceptors adds interceptors that run after authentication (fault
// injection in tests, metrics).
func WithInterceptors(u []grpc.UnaryServerInterceptor, s []grpc.StreamServerInterceptor) Option {
	return func(o *options) {
		o.unaryInts = append(o.unaryInts, u...)
		o.streamInts = append(o.streamInts, s...)
	}
}

// WithOuterInterceptors adds interceptors that run before authentication,
// so that they see every RPC, refused ones included (metrics).
func WithOuterInterceptors(u []grpc.UnaryServerInterceptor, s []grpc.StreamServerInterceptor) Option {
	return func(o *options) {
		o.unaryOut = append(o.unaryOut, u...)
		o.streamOut = append(o.streamOut, s...)
	}
}

// WithGRPCOptions adds raw gRPC server options; they come after the
// defaults (the connection's RPC limit, DefaultHandshakeTimeout, the
// keepalive parameters and enforcement policy), so they override them
// (grpc.KeepaliveParams and grpc.KeepaliveEnforcementPolicy each replace
// all of theirs).
func WithGRPCOptions(opts ...grpc.ServerOption) Option {
	return func(o *options) { o.grpcOpts = append(o.grpcOpts, opts...) }
}

// Server is a gNMI target's gRPC server.
type Server struct {
	g *grpc.Server
}

// ErrTransport is returned when neither or both of TLS and insecure are set.
var ErrTransport = errors.New("target: exactly one of WithTLS and WithInsecure is required")

// New builds the server.
func New(opts ...Option) (*Server, error) {
	o := options{maxRecv: DefaultMaxRecvMsgSize, maxConnRPC: DefaultMaxConcurrentStreams}
	for _, opt := range opts {
		opt(&o)
	}
	if (o.tls == nil) == !o.insecure {
		return nil, ErrTransport
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = credentials.NewTLS(o.tls)
	}
	unary := append([]grpc.UnaryServerInterceptor{capUnary}, o.unaryOut...)
	stream := append([]grpc.StreamServerInterceptor{capStream}, o.streamOut...)
	if o.auth != nil {
		unary = append(unary, o.auth.UnaryInterceptor())
		stream = append(stream, o.auth.StreamInterceptor())
	}
	unary = append(unary, o.unaryInts...)
	stream = append(stream, o.streamInts...)
	gopts := append([]grpc.ServerOption{
		grpc.Creds(creds),
		grpc.MaxRecvMsgSize(o.maxRecv),
		grpc.MaxConcurrentStreams(o.maxConnRPC),
		grpc.ConnectionTimeout(DefaultHandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: DefaultKeepaliveTime, Timeout: DefaultKeepaliveTimeout,
			MaxConnectionIdle: DefaultMaxConnectionIdle}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: DefaultKeepaliveMinTime, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	}, o.grpcOpts...)
	g := grpc.NewServer(gopts...)
	// With authentication, a unary RPC's credentials are checked before its
	// request is read (auth.Authenticator.MethodHandler); Subscribe's are
	// checked by the stream interceptor, before the handler reads anything.
	desc := gnmi.GNMI_ServiceDesc
	if o.auth != nil {
		desc.Methods = slices.Clone(desc.Methods)
		for i, m := range desc.Methods {
			desc.Methods[i].Handler = o.auth.MethodHandler("/"+desc.ServiceName+"/"+m.MethodName, m.Handler)
		}
	}
	g.RegisterService(&desc, &service{caps: o.caps, get: o.get, set: o.set, sub: o.sub})
	return &Server{g: g}, nil
}

// Serve serves on lis until Stop.
func (s *Server) Serve(lis net.Listener) error { return s.g.Serve(lis) }

// Stop closes every connection and stream now.
func (s *Server) Stop() { s.g.Stop() }

// GracefulStop waits for RPCs to finish; Subscribe streams end only when
// their clients cancel, so prefer Stop for those.
func (s *Server) GracefulStop() { s.g.GracefulStop() }

// GRPC returns the underlying server, to register more services.
func (s *Server) GRPC() *grpc.Server { return s.g }

type service struct {
	gnmi.UnimplementedGNMIServer
	caps CapabilitiesHandler
	get  GetHandler
	set  SetHandler
	sub  SubscribeHandler
}

func (s *service) Capabilities(ctx context.Context, req *gnmi.CapabilityRequest) (*gnmi.CapabilityResponse, error) {
	if s.caps == nil {
		return nil, status.Error(codes.Unimplemented, "capabilities is not implemented yet")
	}
	return s.caps.Capabilities(ctx, req)
}

func (s *service) Get(ctx context.Context, req *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	if s.get == nil {
		return nil, status.Error(codes.Unimplemented, "get is not implemented yet")
	}
	return s.get.Get(ctx, req)
}

func (s *service) Set(ctx context.Context, req *gnmi.SetRequest) (*gnmi.SetResponse, error) {
	if s.set == nil {
		return nil, status.Error(codes.Unimplemented, "set is not implemented yet")
	}
	return s.set.Set(ctx, req)
}

func (s *service) Subscribe(stream gnmi.GNMI_SubscribeServer) error {
	if s.sub == nil {
		return status.Error(codes.Unimplemented, "subscribe is not implemented")
	}
	return s.sub.Subscribe(stream)
}

// MaxStatusMessageBytes is the most of an RPC's error message a client is
// sent: a message quoting what a request gave (a value, a path, a name) is
// cut where it quotes it (store.ErrorText, 512 bytes); this bounds what
// any other error could echo, whatever quotes it.
const MaxStatusMessageBytes = 8 << 10

// capUnary and capStream, the outermost interceptors, cut an error's
// message to MaxStatusMessageBytes (capStatus).
func capUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	return resp, capStatus(err)
}

func capStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return capStatus(h(srv, ss))
}

// capStatus is err with its status message cut after
// MaxStatusMessageBytes (at a character's start, "… (N bytes)" saying how
// long it was), its code and details kept.
func capStatus(err error) error {
	st, ok := status.FromError(err)
	if err == nil || !ok || len(st.Message()) <= MaxStatusMessageBytes {
		return err
	}
	p := st.Proto()
	msg := p.GetMessage()
	cut := MaxStatusMessageBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	p.Message = msg[:cut] + "… (" + strconv.Itoa(len(msg)) + " bytes)"
	return status.FromProto(p).Err()
}
