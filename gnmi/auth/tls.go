package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ErrClientCA marks ServerTLS's errors about the client CA file, as
// against its certificate and key: a command names the key of the file.
var ErrClientCA = errors.New("client CA")

// ServerTLS returns the TLS configuration of the target from PEM files: its
// certificate and key, and optionally a CA whose certificates clients must
// present (mutual TLS). TLS 1.2 is the minimum. The certificate and key
// are read again at the next handshake after either file changes (its
// modification time or size), so that a renewed certificate (cert-manager,
// ACME) is served without a restart; a pair that does not load (one file
// renewed, the other not yet) leaves the previous one served until it
// does. The client CA is read once.
func ServerTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := r.load(); err != nil {
		return nil, fmt.Errorf("loading server certificate: %w", err)
	}
	cfg := &tls.Config{GetCertificate: r.get, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pool, err := certPool(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("loading %w: %w", ErrClientCA, err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientTLS returns a client TLS configuration that trusts caFile (the
// system's roots when it is empty: a caller with skip_verify needs none)
// and, when certFile is set, presents a client certificate (for clients and
// tests).
func ClientTLS(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := certPool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// certReloader serves a certificate and key read from files, read again
// when either file's modification time or size changes.
type certReloader struct {
	certFile, keyFile string

	mu   sync.Mutex
	cert *tls.Certificate
	// seen: the files' modification times and sizes when cert was read.
	seen [2]fileStamp
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(file string) (fileStamp, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

// load reads the pair if a file changed since it was last read; on an
// error the previous pair stays (and is tried again at the next call).
func (r *certReloader) load() error {
	var now [2]fileStamp
	for i, f := range []string{r.certFile, r.keyFile} {
		st, err := stamp(f)
		if err != nil {
			return err
		}
		now[i] = st
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && now == r.seen {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	r.cert, r.seen = &cert, now
	return nil
}

// get is tls.Config.GetCertificate: the pair as the files hold it now, or
// the last pair that loaded.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	_ = r.load() // a renewal half written: the previous pair meanwhile
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cert, nil
}

func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates", file)
	}
	return pool, nil
}
