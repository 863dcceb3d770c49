// Package targettest serves a target.Server on loopback for tests and
// returns a gNMI client connected to it. Test support only.
package servicetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lhcnp/lhcnp/gnmi/service"
)

// Client serves srv (built WithInsecure) on 127.0.0.1 at a free port and
// returns a client of it. The server stops and the connection closes when
// the test ends.
func Client(t testing.TB, srv *service.Server) gnmi.GNMIClient {
	t.Helper()
	return gnmi.NewGNMIClient(Dial(t, Serve(t, srv)))
}

// Dial returns a plaintext connection to addr, closed when the test ends.
func Dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Serve serves srv on 127.0.0.1 at a free port until the test ends and
// returns the address (for clients such as gnmic).
func Serve(t testing.TB, srv *service.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// MaxConcurrentStreams sends conn, a plaintext connection to a server,
// the HTTP/2 preface and returns the SETTINGS_MAX_CONCURRENT_STREAMS of the
// server's SETTINGS: the RPCs one connection may have open at once (the
// test fails if it sends none, no limit).
func MaxConcurrentStreams(t testing.TB, conn net.Conn) uint32 {
	t.Helper()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			got, ok := s.Value(http2.SettingMaxConcurrentStreams)
			if !ok {
				t.Fatal("no SETTINGS_MAX_CONCURRENT_STREAMS: no limit")
			}
			return got
		}
	}
}

// SelfSignedTLS writes a self-signed ECDSA certificate for 127.0.0.1 and
// localhost, valid for a day, and its key, as PEM files in dir: a TLS
// server uses both, a client trusts the certificate as its CA (gnmic
// --tls-ca).
func SelfSignedTLS(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "lhcnp test switch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "switch-cert.pem"), filepath.Join(dir, "switch-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
