// Package switchtest runs gNMI targets for the collector's tests: the
// switch's own serving code (gnmi/store, gnmi/subscribe,
// gnmi/service, gnmi/auth) on a loopback port, with a store the test
// publishes into deterministically, so it can count exactly what the
// switch published. The switch can be stopped and started again on the
// same address (a switch restart). Test support only.
package switchtest

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
)

// Switch is one test target.
type Switch struct {
	Name string
	Addr string
	t    testing.TB

	mu    sync.Mutex
	st    *store.Store
	sub   *subscribe.Server
	srv   *service.Server
	users *auth.Users
	tls   *tls.Config
	// published counts updates applied per leaf path.
	published map[string]int
}

// Option configures Start.
type Option func(*Switch)

// WithUsers requires a username and password.
func WithUsers(u *auth.Users) Option { return func(s *Switch) { s.users = u } }

// Start serves a switch on 127.0.0.1 until the test ends.
func Start(t testing.TB, name string, opts ...Option) *Switch {
	t.Helper()
	s := &Switch{Name: name, t: t}
	for _, o := range opts {
		o(s)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = lis.Addr().String()
	s.st = store.New()
	s.published = map[string]int{}
	s.serve(lis)
	t.Cleanup(s.Stop)
	return s
}

func (s *Switch) serve(lis net.Listener) {
	s.sub = subscribe.New(s.st, subscribe.WithOrigins(schema.Origin, schema.OpenConfigOrigin))
	transport := service.WithInsecure()
	if s.tls != nil {
		transport = service.WithTLS(s.tls)
	}
	srv, err := service.New(transport, service.WithAuth(auth.New(s.users)), service.WithSubscribe(s.sub))
	if err != nil {
		s.t.Fatal(err)
	}
	s.srv = srv
	go srv.Serve(lis)
}

// Stop stops serving (streams break, as when the switch goes down).
func (s *Switch) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Stop()
		s.srv = nil
	}
}

// Restart starts the switch again on the same address with an empty
// store: its counters start from zero, as after a reboot.
func (s *Switch) Restart() {
	s.Stop()
	var lis net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for {
		if lis, err = net.Listen("tcp", s.Addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the port is released asynchronously by the kernel
	}
	if err != nil {
		s.t.Fatalf("restart %s: %v", s.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = store.New()
	s.serve(lis)
}

// Stats returns the Subscribe server's counters (since the last start).
func (s *Switch) Stats() subscribe.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sub.Stats()
}

// Queue is a queue's path prefix.
func Queue(iface string, q int) string {
	return fmt.Sprintf("/lhcnp/interfaces/interface[name=%s]/queues/queue[id=%d]", iface, q)
}

// Publish applies updates of leaves (full paths) at ts (ns) in one Apply.
func (s *Switch) Publish(ts int64, leaves map[string]*gnmi.TypedValue) {
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	var b store.Batch
	for p, v := range leaves {
		kind := store.Gauge
		b.Update(store.MustPath(p), v, kind)
	}
	if _, err := st.Apply(&b, ts); err != nil {
		s.t.Errorf("publish: %v", err)
	}
	s.mu.Lock()
	for p := range leaves {
		s.published[p]++
	}
	s.mu.Unlock()
}

// Delete removes leaves or subtrees (full paths) at ts (ns) in one Apply:
// the switch sends their deletes.
func (s *Switch) Delete(ts int64, paths ...string) {
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	var b store.Batch
	for _, p := range paths {
		b.Delete(store.MustPath(p))
	}
	if _, err := st.Apply(&b, ts); err != nil {
		s.t.Errorf("delete: %v", err)
	}
}

// Published returns how many updates of a leaf were published.
func (s *Switch) Published(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published[path]
}

// Uint is a uint64 TypedValue.
func Uint(v uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}
}

// Str is a string TypedValue.
func Str(v string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: v}}
}
