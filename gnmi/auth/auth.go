package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The metadata keys of the credentials (gnmi-authentication.md; gnmic and
// gnmi_cli send these).
const (
	MetadataUsername = "username"
	MetadataPassword = "password"
)

// SetMethod is the full method name of gNMI Set, the only write RPC.
const SetMethod = "/gnmi.gNMI/Set"

// Identity is the authenticated caller, stored in the RPC context.
type Identity struct {
	User string
	Role Role
}

type identityKey struct{}

// FromContext returns the caller's identity.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

type options struct {
	maxStreams        int
	maxStreamsPerUser int
	maxBcrypt         int
	maxBcryptWaiting  int
	writeMethods      map[string]bool
	cost              int
}

// Option configures an Authenticator.
type Option func(*options)

// WithMaxStreams limits concurrent streaming RPCs over all users (0: none).
func WithMaxStreams(n int) Option { return func(o *options) { o.maxStreams = n } }

// WithMaxStreamsPerUser limits concurrent streaming RPCs of one user (0: none).
func WithMaxStreamsPerUser(n int) Option { return func(o *options) { o.maxStreamsPerUser = n } }

// WithMaxConcurrentBcrypt sets how many bcrypt comparisons may run at once
// (0, the default: runtime.GOMAXPROCS(0) when New runs). A check over the
// bound waits for a slot as long as its RPC's context lasts (unless
// WithMaxBcryptWaiting checks wait already); a password already verified
// (cached) never waits.
func WithMaxConcurrentBcrypt(n int) Option { return func(o *options) { o.maxBcrypt = n } }

// BcryptWaitingPerSlot is how many checks may wait for a bcrypt slot, per
// slot, by default: 64 × GOMAXPROCS with the default slots. A check waits
// about 50 ms per check ahead of it per slot, so the last waits some 3 s.
const BcryptWaitingPerSlot = 64

// WithMaxBcryptWaiting sets how many checks may wait for a bcrypt slot at
// once (0, the default: BcryptWaitingPerSlot per slot). One more is
// refused at once, RESOURCE_EXHAUSTED: each waiting check is an RPC's
// goroutine and its request held, and wrong passwords (never cached) from
// many connections would pile them up without end.
func WithMaxBcryptWaiting(n int) Option { return func(o *options) { o.maxBcryptWaiting = n } }

// WithWriteMethods sets the full method names that need the read-write role
// (default: gNMI Set).
func WithWriteMethods(methods ...string) Option {
	return func(o *options) {
		o.writeMethods = map[string]bool{}
		for _, m := range methods {
			o.writeMethods[m] = true
		}
	}
}

// The stream limits of the gNMI endpoints lhcnp serves (each switch's
// target, the collector's northbound), their configuration's defaults: in
// all, and per user when there are users (without, every client is the
// one anonymous user). One more stream is RESOURCE_EXHAUSTED. Without them
// an authenticated client, or anyone where there are no users, could open
// streams, each with its queue and goroutines, without end.
const (
	DefaultMaxStreams        = 256
	DefaultMaxStreamsPerUser = 32
)

// Authenticator checks credentials and roles and counts streams. Build it
// with New and install UnaryInterceptor and StreamInterceptor on the server.
type Authenticator struct {
	o  options
	cr *credentials // shared by the authenticators WithStreamLimits derives

	mu      sync.Mutex
	streams int
	perUser map[string]int
}

// credentials is what checks passwords: the users, the cache of verified
// passwords and the bcrypt slots. The servers of one process (the switches
// of a fabric) share it, each counting its own streams.
type credentials struct {
	users atomic.Pointer[Users]
	// bcryptSlots bounds the bcrypt comparisons running at once: each
	// costs tens of milliseconds of a core, and a wrong password is never
	// cached, so without a bound a client sending wrong ones on many
	// streams keeps every core busy.
	bcryptSlots chan struct{}
	// compare is bcrypt.CompareHashAndPassword, and onWait nil; tests
	// hold a comparison in compare and see in onWait a check wait for a
	// slot.
	compare func(hash, password []byte) error
	onWait  func()
	// waiting counts the checks waiting for a slot, at most maxWaiting.
	waiting    atomic.Int64
	maxWaiting int64

	mu       sync.Mutex
	dummy    []byte              // what an unknown user's password is compared against (dummyHash)
	verified map[string][32]byte // user → sha256 of a password bcrypt accepted
}

// New returns an Authenticator over users. A nil users disables
// authentication: every caller is the read-write user "anonymous" (for
// --insecure labs only). Stream limits still apply.
func New(users *Users, opts ...Option) *Authenticator {
	o := options{writeMethods: map[string]bool{SetMethod: true}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxBcrypt <= 0 {
		o.maxBcrypt = runtime.GOMAXPROCS(0)
	}
	if o.maxBcryptWaiting <= 0 {
		o.maxBcryptWaiting = BcryptWaitingPerSlot * o.maxBcrypt
	}
	cr := &credentials{verified: map[string][32]byte{}, dummy: dummyHash(users),
		bcryptSlots: make(chan struct{}, o.maxBcrypt), compare: bcrypt.CompareHashAndPassword,
		maxWaiting: int64(o.maxBcryptWaiting)}
	cr.users.Store(users)
	return &Authenticator{o: o, cr: cr, perUser: map[string]int{}}
}

// WithStreamLimits returns an Authenticator that checks credentials with
// a's users, cache and bcrypt slots (a SetUsers on either is seen by both)
// and counts its own streams, at most maxStreams in all and
// maxStreamsPerUser of one user (0: no limit): one per server, the servers
// of a process sharing the bcrypt bound, each with its own streams.
func (a *Authenticator) WithStreamLimits(maxStreams, maxStreamsPerUser int) *Authenticator {
	o := a.o
	o.maxStreams, o.maxStreamsPerUser = maxStreams, maxStreamsPerUser
	return &Authenticator{o: o, cr: a.cr, perUser: map[string]int{}}
}

// SetUsers replaces the users (a reloaded file); cached verifications go.
// The users change under cr.mu, with the cache cleared, so that a check
// holding cr.mu sees either the old users and their cache or the new ones
// and none.
func (a *Authenticator) SetUsers(u *Users) {
	d := dummyHash(u)
	cr := a.cr
	cr.mu.Lock()
	cr.users.Store(u)
	cr.dummy = d
	clear(cr.verified)
	cr.mu.Unlock()
}

// dummyHash returns a hash of a password no one sends, at the cost most of
// the users' hashes have: an unknown user's password is compared against
// it, so that its refusal costs what a wrong password's does. Made here,
// not at the first unknown user, whose refusal would cost a hash more.
func dummyHash(u *Users) []byte {
	if u == nil {
		return nil
	}
	h, _ := bcrypt.GenerateFromPassword([]byte("unknown user"), u.commonCost())
	return h
}

// Authenticate checks the credentials in ctx's metadata. bcrypt makes a check
// take tens of milliseconds, so a password bcrypt accepted is remembered as
// its SHA-256 and later checks compare digests in constant time. An unknown
// user costs a bcrypt comparison too, at the cost most users' hashes have,
// so timing does not reveal names (a user whose hash has another cost can
// still be told apart: keep one cost). At most WithMaxConcurrentBcrypt
// comparisons run at once; a check waiting for one fails with ctx's error
// (CANCELLED, DEADLINE_EXCEEDED) if ctx ends first, and one over
// WithMaxBcryptWaiting waiting is RESOURCE_EXHAUSTED at once.
func (a *Authenticator) Authenticate(ctx context.Context) (Identity, error) {
	cr := a.cr
	users := cr.users.Load()
	if users == nil {
		return Identity{User: "anonymous", Role: ReadWrite}, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	name, pw := first(md, MetadataUsername), first(md, MetadataPassword)
	if name == "" || pw == "" {
		return Identity{}, status.Error(codes.Unauthenticated, "missing username or password in metadata")
	}
	u, known := users.byName[name]
	if len(pw) > MaxPasswordBytes {
		// bcrypt reads 72 bytes: a longer password would match a stored
		// one of 72 whatever follows. No password lhcnp passwd hashes is
		// longer; refused as a wrong one is (the same message), after the
		// same cost.
		known = false
	}
	sum := sha256.Sum256([]byte(pw))
	var hash []byte
	if known {
		cr.mu.Lock()
		v, ok := cr.verified[name]
		cr.mu.Unlock()
		if ok && subtle.ConstantTimeCompare(v[:], sum[:]) == 1 {
			return Identity{User: name, Role: u.Role}, nil
		}
		hash = u.Hash
	} else {
		cr.mu.Lock()
		hash = cr.dummy // it fails: the cost is the point
		cr.mu.Unlock()
	}
	match, err := cr.bcryptCompare(ctx, hash, pw)
	if err != nil {
		return Identity{}, err
	}
	if known && match {
		// Cached only if the users are still those it was verified
		// against: a SetUsers meanwhile cleared the cache, and the new
		// users may not have this password.
		cr.mu.Lock()
		if cr.users.Load() == users {
			cr.verified[name] = sum
		}
		cr.mu.Unlock()
		return Identity{User: name, Role: u.Role}, nil
	}
	return Identity{}, status.Error(codes.Unauthenticated, "wrong username or password")
}

// bcryptCompare compares pw with hash once one of the bcrypt slots is free,
// waiting for it as long as ctx lasts, unless maxWaiting checks wait
// already: then it is refused at once.
func (cr *credentials) bcryptCompare(ctx context.Context, hash []byte, pw string) (bool, error) {
	select {
	case cr.bcryptSlots <- struct{}{}:
	default:
		if cr.waiting.Add(1) > cr.maxWaiting {
			cr.waiting.Add(-1)
			return false, status.Errorf(codes.ResourceExhausted,
				"too many password checks waiting for bcrypt: limit %d; retry later", cr.maxWaiting)
		}
		if cr.onWait != nil {
			cr.onWait()
		}
		select {
		case cr.bcryptSlots <- struct{}{}:
			cr.waiting.Add(-1)
		case <-ctx.Done():
			cr.waiting.Add(-1)
			return false, status.Errorf(status.FromContextError(ctx.Err()).Code(), "waiting to check the password: %v", ctx.Err())
		}
	}
	defer func() { <-cr.bcryptSlots }()
	return cr.compare(hash, []byte(pw)) == nil, nil
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (a *Authenticator) authorize(id Identity, method string) error {
	if a.o.writeMethods[method] && id.Role != ReadWrite {
		return status.Errorf(codes.PermissionDenied, "user %q is %v: %s needs read-write", id.User, id.Role, method)
	}
	return nil
}

// checkedKey marks a context whose credentials MethodHandler checked; its
// value, a checked, is the outcome, so that UnaryInterceptor does not check
// (for a wrong password: hash) again.
type checkedKey struct{}

type checked struct {
	id  Identity
	err error
}

// MethodHandler wraps the handler of the unary method fullMethod (a
// grpc.MethodDesc's) so that the credentials are checked before its request
// is read. grpc-go calls the unary interceptors only after the handler has
// received and decoded the request: without this, a client with no
// credentials makes the server receive and decode up to the max message size
// (4 MiB of empty repeated messages decodes into some 200 MB), or holds a
// stream and its goroutine for as long as it likes by never sending the
// request. A refused call still goes through ic, with a nil request, so that
// the interceptors outside authentication (metrics) see it; UnaryInterceptor
// refuses it there with the same error.
func (a *Authenticator) MethodHandler(fullMethod string, h grpc.MethodHandler) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		id, err := a.Authenticate(ctx)
		ctx = context.WithValue(ctx, checkedKey{}, checked{id: id, err: err})
		if err == nil {
			return h(srv, ctx, dec, ic)
		}
		if ic == nil {
			return nil, err
		}
		refuse := func(context.Context, any) (any, error) { return nil, err }
		return ic(ctx, nil, &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}, refuse)
	}
}

// UnaryInterceptor authenticates and authorizes unary RPCs (with the outcome
// of MethodHandler's check, when it made one).
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		c, ok := ctx.Value(checkedKey{}).(checked)
		if !ok {
			c.id, c.err = a.Authenticate(ctx)
		}
		id, err := c.id, c.err
		if err != nil {
			return nil, err
		}
		if err := a.authorize(id, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(context.WithValue(ctx, identityKey{}, id), req)
	}
}

// StreamInterceptor authenticates and authorizes streaming RPCs and enforces
// the stream limits (RESOURCE_EXHAUSTED).
func (a *Authenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		id, err := a.Authenticate(ss.Context())
		if err != nil {
			return err
		}
		if err := a.authorize(id, info.FullMethod); err != nil {
			return err
		}
		if err := a.acquire(id.User); err != nil {
			return err
		}
		defer a.release(id.User)
		return handler(srv, &identityStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), identityKey{}, id)})
	}
}

func (a *Authenticator) acquire(user string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.o.maxStreams > 0 && a.streams >= a.o.maxStreams {
		return status.Errorf(codes.ResourceExhausted, "too many streams on this target: limit %d (max_streams)", a.o.maxStreams)
	}
	if a.o.maxStreamsPerUser > 0 && a.perUser[user] >= a.o.maxStreamsPerUser {
		return status.Errorf(codes.ResourceExhausted, "too many streams for user %q: limit %d (max_streams_per_user)", user, a.o.maxStreamsPerUser)
	}
	a.streams++
	a.perUser[user]++
	return nil
}

func (a *Authenticator) release(user string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.streams--
	if a.perUser[user]--; a.perUser[user] <= 0 {
		delete(a.perUser, user)
	}
}

// Streams returns the number of open streaming RPCs.
func (a *Authenticator) Streams() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.streams
}

type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }
