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
// bound waits for a slot as long as its RPC's context lasts; a password
// already verified (cached) never waits.
func WithMaxConcurrentBcrypt(n int) Option { return func(o *options) { o.maxBcrypt = n } }

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

// Authenticator checks credentials and roles and counts streams. Build it
// with New and install UnaryInterceptor and StreamInterceptor on the server.
type Authenticator struct {
	o     options
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

	mu       sync.Mutex
	dummy    []byte              // what an unknown user's password is compared against (dummyHash)
	verified map[string][32]byte // user → sha256 of a password bcrypt accepted
	streams  int
	perUser  map[string]int
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
	a := &Authenticator{o: o, verified: map[string][32]byte{}, perUser: map[string]int{}, dummy: dummyHash(users),
		bcryptSlots: make(chan struct{}, o.maxBcrypt), compare: bcrypt.CompareHashAndPassword}
	a.users.Store(users)
	return a
}

// SetUsers replaces the users (a reloaded file); cached verifications go.
// The users change under a.mu, with the cache cleared, so that a check
// holding a.mu sees either the old users and their cache or the new ones
// and none.
func (a *Authenticator) SetUsers(u *Users) {
	d := dummyHash(u)
	a.mu.Lock()
	a.users.Store(u)
	a.dummy = d
	clear(a.verified)
	a.mu.Unlock()
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
// (CANCELLED, DEADLINE_EXCEEDED) if ctx ends first.
func (a *Authenticator) Authenticate(ctx context.Context) (Identity, error) {
	users := a.users.Load()
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
		a.mu.Lock()
		v, ok := a.verified[name]
		a.mu.Unlock()
		if ok && subtle.ConstantTimeCompare(v[:], sum[:]) == 1 {
			return Identity{User: name, Role: u.Role}, nil
		}
		hash = u.Hash
	} else {
		a.mu.Lock()
		hash = a.dummy // it fails: the cost is the point
		a.mu.Unlock()
	}
	match, err := a.bcryptCompare(ctx, hash, pw)
	if err != nil {
		return Identity{}, err
	}
	if known && match {
		// Cached only if the users are still those it was verified
		// against: a SetUsers meanwhile cleared the cache, and the new
		// users may not have this password.
		a.mu.Lock()
		if a.users.Load() == users {
			a.verified[name] = sum
		}
		a.mu.Unlock()
		return Identity{User: name, Role: u.Role}, nil
	}
	return Identity{}, status.Error(codes.Unauthenticated, "wrong username or password")
}

// bcryptCompare compares pw with hash once one of the bcrypt slots is free,
// waiting for it as long as ctx lasts.
func (a *Authenticator) bcryptCompare(ctx context.Context, hash []byte, pw string) (bool, error) {
	select {
	case a.bcryptSlots <- struct{}{}:
	default:
		if a.onWait != nil {
			a.onWait()
		}
		select {
		case a.bcryptSlots <- struct{}{}:
		case <-ctx.Done():
			return false, status.Errorf(status.FromContextError(ctx.Err()).Code(), "waiting to check the password: %v", ctx.Err())
		}
	}
	defer func() { <-a.bcryptSlots }()
	return a.compare(hash, []byte(pw)) == nil, nil
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
		return status.Errorf(codes.ResourceExhausted, "too many streams: limit %d", a.o.maxStreams)
	}
	if a.o.maxStreamsPerUser > 0 && a.perUser[user] >= a.o.maxStreamsPerUser {
		return status.Errorf(codes.ResourceExhausted, "too many streams for user %q: limit %d", user, a.o.maxStreamsPerUser)
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
