package northbound_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/gnmicbin"
	"github.com/lhcnp/lhcnp/internal/oracle"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/server/fabric"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// published is one leaf value (or delete) a switch sent the collector.
type published struct {
	target string
	path   string // store.PathString of the full path
	ts     int64
	val    *gnmi.TypedValue // nil: a delete
}

// recorder keeps every notification the collector's loops received: what
// the switches published to it, in order.
type recorder struct {
	mu     sync.Mutex
	vals   []published
	seen   map[string]int64 // last timestamp per target
	synced map[string]bool  // the target's stream delivered its sync_response
	// syncTS: per target, the newest timestamp of its initial data (a leaf's
	// timestamp is the time its value last changed: the initial data is
	// not stamped with one time).
	syncTS map[string]int64
}

func (r *recorder) observe(t string, resp *gnmi.SubscribeResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if resp.GetSyncResponse() {
		if r.synced == nil {
			r.synced, r.syncTS = map[string]bool{}, map[string]int64{}
		}
		r.synced[t] = true
		r.syncTS[t] = r.seen[t]
	}
	n := resp.GetUpdate()
	if n == nil {
		return
	}
	join := func(p *gnmi.Path) string {
		return store.PathString(&gnmi.Path{Elem: append(append([]*gnmi.PathElem(nil), n.GetPrefix().GetElem()...), p.GetElem()...)})
	}
	for _, d := range n.GetDelete() {
		r.vals = append(r.vals, published{target: t, path: join(d), ts: n.GetTimestamp()})
	}
	for _, u := range n.GetUpdate() {
		// The collector reuses the messages it decodes: keep a copy.
		r.vals = append(r.vals, published{target: t, path: join(u.GetPath()), ts: n.GetTimestamp(),
			val: proto.Clone(u.GetVal()).(*gnmi.TypedValue)})
	}
	if r.seen == nil {
		r.seen = map[string]int64{}
	}
	r.seen[t] = max(r.seen[t], n.GetTimestamp())
}

func (r *recorder) snapshot() []published {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]published(nil), r.vals...)
}

// isSynced: the collector has received the target's whole initial state
// (and so has the northbound: the observer applied every notification
// before the sync_response to it).
func (r *recorder) isSynced(t string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.synced[t]
}

// initialUpTo returns the newest timestamp of the targets' initial data,
// once every one of them synced.
func (r *recorder) initialUpTo(targets ...string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ts int64
	for _, t := range targets {
		if !r.synced[t] {
			return 0, false
		}
		ts = max(ts, r.syncTS[t])
	}
	return ts, true
}

func (r *recorder) lastTS(t string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[t]
}

// fleet is two real switch targets (the lab's n1 and n2 on one engine,
// server/fabric, as `lhcnp switch` runs them), a collector subscribed to
// both with a database of its own, and the collector's northbound.
type fleet struct {
	f      *fabric.Fabric
	nb     *northbound.Server
	addr   string // the northbound
	sw     map[string]string
	rec    *recorder
	dsn    string
	pool   *pgxpool.Pool
	cancel context.CancelFunc
}

func startFleet(t *testing.T) *fleet {
	t.Helper()
	pool, dsn := pgtest.New(t)
	sc, err := scenario.LoadFile("../../scenarios/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx, cancel := context.WithCancel(context.Background())
	fl := &fleet{rec: &recorder{}, sw: map[string]string{}, dsn: dsn, pool: pool, cancel: cancel}
	f, err := fabric.New(ctx, fabric.Config{Scenario: sc, Speed: 0.05, PublishInterval: 100 * time.Millisecond,
		TargetOptions: []service.Option{service.WithInsecure()},
		Switches: []fabric.Switch{
			{Name: "n1", Listen: "127.0.0.1:0", Config: read("../../examples/lab-n1.json"), ConfigName: "lab-n1.json"},
			{Name: "n2", Listen: "127.0.0.1:0", Config: read("../../examples/lab-n2.json"), ConfigName: "lab-n2.json",
				Interfaces: map[string]string{"to-dest": "n2-dest"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	fl.f = f
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := f.Run(ctx); err != nil {
			t.Errorf("fabric: %v", err)
		}
	}()
	cfg := config.Defaults()
	cfg.ID = "nb-test"
	cfg.DB.DSN, cfg.DB.Migrate, cfg.DB.TargetsTable = dsn, false, false
	cfg.StateDir = t.TempDir()
	cfg.Writer.BatchRows, cfg.Writer.BatchInterval = 500, 20*time.Millisecond
	for _, s := range f.Switches() {
		fl.sw[s.Name] = s.Addr().String()
		cfg.Targets = append(cfg.Targets, config.Target{Name: s.Name, Address: s.Addr().String(), Insecure: true,
			Subscriptions: []config.Subscription{{Paths: []string{"/lhcnp"}, Mode: "on_change"}}})
	}
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	conns := &northbound.Conns{}
	dial := func(ctx context.Context, name string) (*grpc.ClientConn, context.Context, bool, error) {
		addr, ok := fl.sw[name]
		if !ok {
			return nil, nil, false, nil
		}
		cc, err := conns.Get(name, func() (*grpc.ClientConn, error) {
			return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		})
		return cc, ctx, true, err
	}
	fl.nb = northbound.New(sch, northbound.WithHistory(pool), northbound.WithDialer(dial))
	c, err := collector.New(ctx, cfg, collector.WithObserver(func(t string, r *gnmi.SubscribeResponse) {
		fl.rec.observe(t, r)
		fl.nb.Observe(t, r)
	}))
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(ctx); err != nil {
			t.Errorf("collector: %v", err)
		}
	}()
	srv, err := service.New(service.WithInsecure(), service.WithCapabilities(fl.nb), service.WithGet(fl.nb),
		service.WithSet(fl.nb), service.WithSubscribe(fl.nb))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl.addr = lis.Addr().String()
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(func() {
		srv.Stop()
		cancel()
		wg.Wait()
		conns.Close() //nolint:errcheck // closing
		f.Close()
	})
	// Both switches streaming into the northbound, with their whole
	// initial state: a switch's first notifications are not all of it
	// (under load the rest follows tens of milliseconds later, and a Get
	// of a leaf not yet there leaves that switch out).
	waitFor(t, 60*time.Second, "both switches' initial state in the northbound", func() bool {
		return fl.rec.isSynced("n1") && fl.rec.isSynced("n2") && len(fl.nb.Targets()) == 2
	})
	return fl
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (fl *fleet) client(t *testing.T, addr string) gnmi.GNMIClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return gnmi.NewGNMIClient(conn)
}

// ygnmi returns a ygnmi client of addr for one target.
func (fl *fleet) ygnmi(t *testing.T, addr, target string) *ygnmi.Client {
	t.Helper()
	c, err := ygnmi.NewClient(fl.client(t, addr), ygnmi.WithTarget(target))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// gnmicPath finds gnmic (internal/gnmicbin) or skips the test, saying why
// (fails it when the oracles are required: internal/oracle).
func gnmicPath(t *testing.T) string {
	t.Helper()
	p, err := gnmicbin.Path("../..")
	if err != nil {
		oracle.Missing(t, err)
	}
	return p
}

// gnmic runs gnmic to its end.
func gnmic(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, gnmicPath(t), args...).CombinedOutput()
	return string(out), err
}

// gnmicUntil runs a gnmic that does not end by itself (a STREAM) and
// stops it once done says its output so far (without whitespace) is
// enough.
func gnmicUntil(t *testing.T, d time.Duration, done func(out string) bool, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, gnmicPath(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out, compacted strings.Builder
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	ok := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		for _, f := range strings.Fields(sc.Text()) {
			compacted.WriteString(f)
		}
		if done(compacted.String()) {
			ok = true
			break
		}
	}
	cancel()
	cmd.Wait() //nolint:errcheck // killed
	if !ok {
		c := compacted.String()
		if len(c) > 4000 {
			c = c[:2000] + " ... " + c[len(c)-2000:]
		}
		t.Fatalf("gnmic %q ended before its output was complete (compacted):\n%s", args, c)
	}
	return out.String()
}

// must holds a value and an error until of checks them in a test.
func must[T any](v T, err error) result[T] { return result[T]{v, err} }

type result[T any] struct {
	v   T
	err error
}

func (r result[T]) of(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func describe(p published) string {
	return fmt.Sprintf("%s %s @%d = %v", p.target, p.path, p.ts, p.val)
}
