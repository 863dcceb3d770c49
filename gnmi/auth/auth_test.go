package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/openconfig/gnmi/proto/gnmi"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA, as PEM files in a temporary directory.
type pki struct {
	dir                                        string
	ca, serverCert, serverKey, cliCert, cliKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	p := pki{dir: dir}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p.ca = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+".key", "EC PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.cliCert, p.cliKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// usersFile writes a users file with alice (read-only) and bob (read-write).
func usersFile(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, u := range []struct{ name, role, pw string }{{"alice", "read-only", "alice-pw"}, {"bob", "rw", "bob-pw"}} {
		h, err := auth.HashPassword(u.pw, bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, u.name+":"+u.role+":"+h)
	}
	path := filepath.Join(t.TempDir(), "users")
	os.WriteFile(path, []byte("# test users\n\n"+strings.Join(lines, "\n")+"\n"), 0o600)
	return path
}

type okSet struct{}

func (okSet) Set(context.Context, *gnmi.SetRequest) (*gnmi.SetResponse, error) {
	return &gnmi.SetResponse{}, nil
}

type okGet struct{}

func (okGet) Get(ctx context.Context, _ *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	if _, ok := auth.FromContext(ctx); !ok {
		return nil, errors.New("no identity in the handler's context")
	}
	return &gnmi.GetResponse{}, nil
}

// gnmiService routes each RPC to its handler, as gnmi/service does.
type gnmiService struct {
	gnmi.UnimplementedGNMIServer
	sub *subscribe.Server
}

func (gnmiService) Set(ctx context.Context, r *gnmi.SetRequest) (*gnmi.SetResponse, error) {
	return okSet{}.Set(ctx, r)
}
func (gnmiService) Get(ctx context.Context, r *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	return okGet{}.Get(ctx, r)
}
func (s gnmiService) Subscribe(stream gnmi.GNMI_SubscribeServer) error {
	return s.sub.Subscribe(stream)
}

type serverConfig struct {
	mtls    bool
	authOpt []auth.Option
	maxRecv int
}

// serve starts a TLS target on loopback and returns its address.
func serve(t *testing.T, p pki, cfg serverConfig) string {
	t.Helper()
	users, err := auth.LoadUsers(usersFile(t))
	if err != nil {
		t.Fatal(err)
	}
	clientCA := ""
	if cfg.mtls {
		clientCA = p.ca
	}
	tlsCfg, err := auth.ServerTLS(p.serverCert, p.serverKey, clientCA)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New()
	st.Update(store.MustPath("/a/b"), &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 1}}, store.Counter, 0)
	a := auth.New(users, cfg.authOpt...)
	opts := []grpc.ServerOption{grpc.Creds(credentials.NewTLS(tlsCfg)),
		grpc.UnaryInterceptor(a.UnaryInterceptor()), grpc.StreamInterceptor(a.StreamInterceptor())}
	if cfg.maxRecv > 0 {
		opts = append(opts, grpc.MaxRecvMsgSize(cfg.maxRecv))
	}
	srv := grpc.NewServer(opts...)
	gnmi.RegisterGNMIServer(srv, gnmiService{sub: subscribe.New(st)})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, p pki, addr string, clientCert bool) gnmi.GNMIClient {
	t.Helper()
	cert, key := "", ""
	if clientCert {
		cert, key = p.cliCert, p.cliKey
	}
	cfg, err := auth.ClientTLS(p.ca, cert, key, "")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return gnmi.NewGNMIClient(conn)
}

func creds(user, pw string) context.Context {
	ctx := context.Background()
	if user == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, user, auth.MetadataPassword, pw)
}

func TestCredentialsAndRoles(t *testing.T) {
	p := newPKI(t)
	c := dial(t, p, serve(t, p, serverConfig{}), false)
	subscribeOnce := func(ctx context.Context) error {
		sc, err := c.Subscribe(ctx)
		if err != nil {
			return err
		}
		sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Mode: gnmi.SubscriptionList_ONCE, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/a")}}}}})
		for {
			r, err := sc.Recv()
			if err != nil {
				return err
			}
			if r.GetSyncResponse() {
				return nil
			}
		}
	}
	get := func(ctx context.Context) error { _, err := c.Get(ctx, &gnmi.GetRequest{}); return err }
	set := func(ctx context.Context) error { _, err := c.Set(ctx, &gnmi.SetRequest{}); return err }
	tests := []struct {
		desc     string
		user, pw string
		rpc      func(context.Context) error
		want     codes.Code
	}{
		{"read-only Get", "alice", "alice-pw", get, codes.OK},
		{"read-only Get again (cached verification)", "alice", "alice-pw", get, codes.OK},
		{"read-only Subscribe", "alice", "alice-pw", subscribeOnce, codes.OK},
		{"read-only Set", "alice", "alice-pw", set, codes.PermissionDenied},
		{"read-write Set", "bob", "bob-pw", set, codes.OK},
		{"wrong password", "alice", "bob-pw", get, codes.Unauthenticated},
		{"wrong password after a right one", "alice", "alice-pw2", get, codes.Unauthenticated},
		{"unknown user", "mallory", "x", get, codes.Unauthenticated},
		{"no credentials", "", "", get, codes.Unauthenticated},
		{"no credentials on a stream", "", "", subscribeOnce, codes.Unauthenticated},
		{"wrong password on Set", "bob", "nope", set, codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := status.Code(tt.rpc(creds(tt.user, tt.pw))); got != tt.want {
				t.Errorf("code = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	addr := serve(t, p, serverConfig{mtls: true})
	if _, err := dial(t, p, addr, true).Get(creds("alice", "alice-pw"), &gnmi.GetRequest{}); err != nil {
		t.Errorf("with a client certificate: %v", err)
	}
	if _, err := dial(t, p, addr, false).Get(creds("alice", "alice-pw"), &gnmi.GetRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("without a client certificate: %v, want Unavailable (handshake refused)", err)
	}
	conn, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	if _, err := gnmi.NewGNMIClient(conn).Get(creds("alice", "alice-pw"), &gnmi.GetRequest{}); err == nil {
		t.Errorf("plaintext client reached a TLS target")
	}
}

func TestStreamLimits(t *testing.T) {
	p := newPKI(t)
	c := dial(t, p, serve(t, p, serverConfig{authOpt: []auth.Option{auth.WithMaxStreams(2), auth.WithMaxStreamsPerUser(1)}}), false)
	open := func(user, pw string) (gnmi.GNMI_SubscribeClient, error) {
		sc, err := c.Subscribe(creds(user, pw))
		if err != nil {
			return nil, err
		}
		sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Subscription: []*gnmi.Subscription{{Path: store.MustPath("/a"), Mode: gnmi.SubscriptionMode_ON_CHANGE}}}}})
		for {
			r, err := sc.Recv()
			if err != nil {
				return nil, err
			}
			if r.GetSyncResponse() {
				return sc, nil
			}
		}
	}
	if _, err := open("alice", "alice-pw"); err != nil {
		t.Fatalf("first stream: %v", err)
	}
	if _, err := open("alice", "alice-pw"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second stream of one user: %v, want ResourceExhausted", err)
	}
	if _, err := open("bob", "bob-pw"); err != nil {
		t.Errorf("another user's stream: %v", err)
	}
	sc, err := c.Subscribe(creds("bob", "bob-pw"))
	if err == nil {
		_, err = sc.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limit 1") && !strings.Contains(err.Error(), "limit 2") {
		t.Errorf("stream over the limits: %v, want ResourceExhausted", err)
	}
}

func TestMaxMessageSize(t *testing.T) {
	p := newPKI(t)
	c := dial(t, p, serve(t, p, serverConfig{maxRecv: 1024}), false)
	big := &gnmi.SetRequest{Update: []*gnmi.Update{{Path: store.MustPath("/a"),
		Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: strings.Repeat("x", 4096)}}}}}
	if _, err := c.Set(creds("bob", "bob-pw"), big); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("Set of 4 KiB with a 1 KiB limit: %v, want ResourceExhausted", err)
	}
	if _, err := c.Set(creds("bob", "bob-pw"), &gnmi.SetRequest{}); err != nil {
		t.Errorf("small Set: %v", err)
	}
}

func TestParseUsers(t *testing.T) {
	h, _ := auth.HashPassword("pw", bcrypt.MinCost)
	tests := []struct {
		desc    string
		in      string
		wantN   int
		wantErr bool
	}{
		{"two users, comments and blanks", "# c\n\nalice:ro:" + h + "\nbob:read-write:" + h + "\n", 2, false},
		{"bad role", "alice:admin:" + h, 0, true},
		{"not a hash", "alice:ro:secret", 0, true},
		{"missing field", "alice:ro", 0, true},
		{"duplicate", "a:ro:" + h + "\na:rw:" + h, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			u, err := auth.ParseUsers(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, auth.ErrUsersFile) {
					t.Errorf("err = %v, want ErrUsersFile", err)
				}
				return
			}
			if u.Len() != tt.wantN {
				t.Errorf("Len() = %d, want %d", u.Len(), tt.wantN)
			}
		})
	}
}

// TestLoadUsersModes: a users file others may read (offline cracking) or
// its group or others may write (a user added) is refused, naming the file
// and its mode; owner-only and group-readable files load.
func TestLoadUsersModes(t *testing.T) {
	path := usersFile(t)
	for _, tt := range []struct {
		desc    string
		mode    os.FileMode
		wantErr bool
	}{
		{"owner only", 0o600, false},
		{"group-readable", 0o640, false},
		{"read-only for the owner", 0o400, false},
		{"world-readable (umask 022, lhcnp passwd >> users)", 0o644, true},
		{"group-writable", 0o660, true},
		{"world-writable", 0o602, true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := auth.LoadUsers(path)
			if !tt.wantErr {
				if err != nil {
					t.Errorf("LoadUsers (mode %04o): %v", tt.mode, err)
				}
				return
			}
			if !errors.Is(err, auth.ErrUsersFile) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("mode %04o", tt.mode)) {
				t.Errorf("LoadUsers (mode %04o): %v, want ErrUsersFile naming the file and its mode", tt.mode, err)
			}
		})
	}
}

// TestLoadUsersErrors: a malformed line of a users file is named as
// PATH:LINE, with what is wrong; a line too long for the scanner is one
// too (it was bufio's "token too long" without a line, and PATH: users
// file: line N before).
func TestLoadUsersErrors(t *testing.T) {
	good, err := auth.PasswdLine("carol", auth.ReadWrite, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ desc, content, want string }{
		{"no role", "# users\n\nbob\n", ":3: bad users file: want name:role:bcrypt-hash"},
		{"unknown role", good + "\nbob:admin:x\n", ":2: bad users file: "},
		{"not a hash", "bob:ro:plain\n", ":1: bad users file: user \"bob\": not a bcrypt hash"},
		{"listed twice", good + "\n" + good + "\n", ":2: bad users file: user \"carol\" listed twice"},
		{"a line over 64 KiB", good + "\n" + strings.Repeat("x", 70000) + "\n", ":2: bad users file: longer than 65536 bytes"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "users")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := auth.LoadUsers(path)
			if !errors.Is(err, auth.ErrUsersFile) || !strings.Contains(err.Error(), path+tt.want) {
				t.Errorf("LoadUsers: %v; want ErrUsersFile, %q", err, path+tt.want)
			}
		})
	}
}

func TestPasswdLine(t *testing.T) {
	line, err := auth.PasswdLine("carol", auth.ReadWrite, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	u, err := auth.ParseUsers(strings.NewReader(line))
	if err != nil || u.Len() != 1 {
		t.Fatalf("ParseUsers(%q) = %v, %v", line, u, err)
	}
	a := auth.New(u)
	id, err := a.Authenticate(metadata.NewIncomingContext(context.Background(), metadata.Pairs("username", "carol", "password", "s3cret")))
	if err != nil || id.Role != auth.ReadWrite {
		t.Errorf("Authenticate = %+v, %v", id, err)
	}
	for _, bad := range []string{"", "a:b", "a b"} {
		if _, err := auth.PasswdLine(bad, auth.ReadOnly, "x"); err == nil {
			t.Errorf("PasswdLine(%q) accepted", bad)
		}
	}
	if _, err := auth.PasswdLine("carol", auth.ReadOnly, strings.Repeat("p", auth.MaxPasswordBytes+1)); err == nil ||
		!strings.Contains(err.Error(), "bcrypt reads 72") {
		t.Errorf("a 73-byte password: %v; want it refused, saying why", err)
	}
}

func TestNoUsersIsAnonymousReadWrite(t *testing.T) {
	id, err := auth.New(nil).Authenticate(context.Background())
	if err != nil || id.Role != auth.ReadWrite {
		t.Errorf("Authenticate = %+v, %v", id, err)
	}
}
