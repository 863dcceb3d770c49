package auth_test

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"os"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/auth"
)

// TestServerTLSReloadsRenewedCertificate: the server's certificate and key
// files replaced (a renewal), the next TLS connection is served the new
// certificate, without a restart; the certificate renewed and its key not
// yet, the previous pair is served until the key follows. Before, the pair
// was read once: the old certificate was served until a restart.
func TestServerTLSReloadsRenewedCertificate(t *testing.T) {
	old, renewed := newPKI(t), newPKI(t)
	cfg, err := auth.ServerTLS(old.serverCert, old.serverKey, "")
	if err != nil {
		t.Fatal(err)
	}
	lis, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.(*tls.Conn).Handshake() //nolint:errcheck // the client checks
			}()
		}
	}()
	served := func() []byte {
		t.Helper()
		c, err := tls.Dial("tcp", lis.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the certificate is what is checked
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Raw
	}
	// der is the certificate of a PEM file.
	der := func(file string) []byte {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := pem.Decode(b)
		return p.Bytes
	}
	oldDER, newDER := der(old.serverCert), der(renewed.serverCert)
	if !bytes.Equal(served(), oldDER) {
		t.Fatal("the first connection is not served the certificate of the files")
	}
	// A later modification time, as a renewal's: the test must not depend
	// on the file system's timestamp granularity.
	replace := func(dst, src string, at time.Time) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dst, at, at); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(time.Minute)
	replace(old.serverCert, renewed.serverCert, later)
	if !bytes.Equal(served(), oldDER) {
		t.Error("the certificate renewed, its key not yet: want the previous pair served")
	}
	replace(old.serverKey, renewed.serverKey, later)
	if !bytes.Equal(served(), newDER) {
		t.Error("the renewed certificate is not served")
	}
}
