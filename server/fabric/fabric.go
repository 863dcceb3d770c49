// Package fabric runs several switches of a scenario in one process: one
// engine paced to the wall clock, a Long-haul CNP node and a gNMI target
// (its own listener, store and publisher) per served switch, and a UDP wire
// (package udpwire) for every link whose far end runs in another process.
// With no wires it is the embedded default: the whole scenario in one
// process, deterministic given the seed. With wires, each process runs the
// part of the scenario its switches reach without crossing a wire, and the
// processes keep one clock: they share an epoch (the wall-clock time of
// simulated time 0) and a speed, and a process that starts late adopts
// the earliest epoch its peers announce (docs/lab.md).
//
// It must not be imported by dataplane-sim/: it is where the simulator
// meets gNMI.
package fabric

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/udpwire"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/internal/pidlock"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/lhcnp/lhcnp/server/startup"
	"github.com/lhcnp/lhcnp/server/switchmetrics"
	"google.golang.org/grpc"
)

// Switch is one served switch.
type Switch struct {
	// Name is the scenario's switch.
	Name string
	// Listen is the gNMI address, host:port (port 0: any free port).
	Listen string
	// Config is the initial YANG configuration, RFC 7951 JSON; ConfigName
	// names it in errors (its file).
	Config     []byte
	ConfigName string
	// Interfaces names the switch's interfaces: YANG name -> link name.
	Interfaces map[string]string
}

// Wire is one link whose far end runs in another process.
type Wire struct {
	// Link is the scenario's link name.
	Link string
	// Listen is the local UDP address; Peer the far end's (host:port).
	Listen string
	Peer   string
	// Capture, if set, receives a pcap of the frames on the wire.
	Capture io.Writer
}

// Config is a fabric process.
type Config struct {
	Scenario *scenario.Scenario
	Switches []Switch
	Wires    []Wire
	// Speed is simulated seconds per wall-clock second (default 1).
	Speed float64
	// PublishInterval is how often state is published (default
	// dataplane.DefaultInterval).
	PublishInterval time.Duration
	// TargetDefinedInterval is how often a TARGET_DEFINED subscription
	// samples counters and gauges (default
	// subscribe.DefaultTargetDefinedInterval).
	TargetDefinedInterval time.Duration
	// Epoch is the wall-clock time of simulated time 0 (default: when Run
	// starts; a peer's earlier epoch is adopted).
	Epoch time.Time
	// Keepalive, DeadAfter and MaxLate tune the wires (udpwire.Config).
	Keepalive, DeadAfter time.Duration
	MaxLate              engine.Time
	// StartWait is how long the engine waits for every wire's link to
	// come up before it starts anyway (default DefaultStartWait): the
	// hosts' first frames (the CM exchange, retried only after the CM
	// response timeout of about 4.3 s) must not go into a link that is
	// still down.
	StartWait time.Duration
	// TargetOptions are the security options of every gNMI target
	// (target.WithAuth, WithTLS or WithInsecure).
	TargetOptions []service.Option
	// TargetOptionsFor, if set, gives the options of one switch's target,
	// after TargetOptions: what each server must have of its own, as the
	// authenticator that counts its streams (auth WithStreamLimits).
	TargetOptionsFor func(name string) []service.Option
	// StartupDir, if set, keeps each switch's startup configuration,
	// NAME.json (package startup): every Set and confirmed commit is
	// written there, and a switch starts from it rather than from its
	// Config when it is there. IgnoreStartup starts every switch from its
	// Config (none: the dataplane's defaults) instead, and overwrites the
	// file (removes it when there is no Config).
	StartupDir    string
	IgnoreStartup bool
	// Schema is the schema the gNMI targets serve (default: schema.New()).
	// It is immutable: one may serve several fabrics, as in tests that
	// build many, where loading it was most of New's time.
	Schema *schema.Schema
	// Metrics, if set, receives each target's RPC, Set, Subscribe and
	// commit metrics (labelled switch=NAME when it is metrics.NewShared, as
	// it must be for more than one switch) and the engine's lag.
	Metrics *switchmetrics.Metrics
	// Log receives link state changes and clock adoptions.
	Log *slog.Logger
}

// Served is one running switch.
type Served struct {
	Name    string
	Binding *dataplane.Binding
	Handler *service.Handler
	Store   *store.Store
	pub     *dataplane.Publisher
	srv     *service.Server
	lis     net.Listener
}

// Addr returns the gNMI listen address.
func (s *Served) Addr() net.Addr { return s.lis.Addr() }

// Fabric is a built fabric process, listening and ready to Run.
type Fabric struct {
	cfg      Config
	net      *dataplane.Network
	switches []*Served
	wires    []*udpwire.Wire
	locks    []*pidlock.Lock // of the startup files, held until Close or the end of Run
	log      *slog.Logger
	clockMu  sync.Mutex
	// onStage, set by tests, is called as Run passes each stage of its
	// start-up (stage names in Run), so a test can cancel at every one.
	onStage func(stage string)
}

// stage reports a stage of Run's start-up to the test hook.
func (f *Fabric) stage(name string) {
	if f.onStage != nil {
		f.onStage(name)
	}
}

// New builds the network, the nodes with their initial configuration, the
// gNMI targets (listening) and the wires (not yet open). Close it if Run
// is not called. A switch or wire of cfg that the scenario lacks, a
// link two interfaces name, a link wired twice, is a *dataplane.KeyError
// (errors.As) whose Served and Wired are indices in cfg.Switches and
// cfg.Wires, so a caller names its own key.
func New(ctx context.Context, cfg Config) (_ *Fabric, err error) {
	n, err := build(&cfg)
	if err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Fabric{cfg: cfg, net: n, log: log}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	sch, err := schemaOf(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Metrics != nil {
		cfg.Metrics.SetEngineLagFunc(f.EngineLag)
	}
	for i, s := range cfg.Switches {
		sw := n.Switches[i]
		st := store.New()
		b := dataplane.NewBinding(sw.Group, sw.Node, sw.Ports, dataplane.WithSpeed(cfg.Speed))
		pub := dataplane.NewPublisher(sch, st, b, dataplane.WithInterval(cfg.PublishInterval))
		hopts := []service.HandlerOption{service.WithStatePublisher(pub), service.WithLogger(log.With("switch", s.Name))}
		var sf *startup.File
		if cfg.StartupDir != "" {
			sf = startup.New(startup.FileName(cfg.StartupDir, s.Name))
			lk, err := sf.Lock()
			if err != nil {
				return nil, fmt.Errorf("switch %s: %w", s.Name, err)
			}
			f.locks = append(f.locks, lk)
			hopts = append(hopts, service.WithPersister(sf))
		}
		h := service.NewHandler(sch, st, b, hopts...)
		if err := loadConfig(ctx, h, pub, s, sf, cfg.IgnoreStartup); err != nil {
			return nil, fmt.Errorf("switch %s: %w", s.Name, err)
		}
		sub := subscribe.New(st, append(service.SubscribeOptions(sch),
			// The store changes once per publish interval: sampling faster
			// would repeat values, so that is the lowest interval possible
			// (what sample_interval 0 gets, gNMI 3.5.1.5.2) and the smallest
			// accepted.
			subscribe.WithMinSampleInterval(max(cfg.PublishInterval, subscribe.DefaultMinSampleInterval)),
			subscribe.WithTargetDefinedInterval(cfg.TargetDefinedInterval))...)
		opts := slices.Clone(cfg.TargetOptions)
		if cfg.TargetOptionsFor != nil {
			opts = append(opts, cfg.TargetOptionsFor(s.Name)...)
		}
		opts = append(opts,
			service.WithCapabilities(h), service.WithGet(h), service.WithSet(h), service.WithSubscribe(sub))
		if m := cfg.Metrics; m != nil {
			if m.Shared() {
				m = m.ForSwitch(s.Name)
			}
			m.WatchSubscriptions(sub)
			m.SetCommitPendingFunc(func() bool { _, _, ok := h.PendingCommit(); return ok })
			opts = append(opts, service.WithOuterInterceptors(
				[]grpc.UnaryServerInterceptor{m.UnaryInterceptor()},
				[]grpc.StreamServerInterceptor{m.StreamInterceptor()}))
		}
		srv, err := service.New(opts...)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", s.Name, err)
		}
		lis, err := net.Listen("tcp", s.Listen)
		if err != nil {
			return nil, fmt.Errorf("switch %s: gnmi: %w", s.Name, err)
		}
		f.switches = append(f.switches, &Served{Name: s.Name, Binding: b, Handler: h, Store: st, pub: pub, srv: srv, lis: lis})
	}
	for _, w := range cfg.Wires {
		lap, err := udpwire.ResolveAddr(ctx, w.Listen)
		if err != nil {
			return nil, fmt.Errorf("fabric: wire %s: listen %q: %w", w.Link, w.Listen, err)
		}
		opts := []udpwire.Option{udpwire.WithLogger(log), udpwire.WithHello(f.hello)}
		if w.Capture != nil {
			opts = append(opts, udpwire.WithCapture(w.Capture))
		}
		uw, err := udpwire.New(n.Net, n.Wired[w.Link], udpwire.Config{Name: w.Link, Listen: lap, Peer: w.Peer, Speed: cfg.Speed,
			VNI: linkVNI(cfg.Scenario, w.Link), Keepalive: cfg.Keepalive, DeadAfter: cfg.DeadAfter, MaxLate: cfg.MaxLate}, opts...)
		if err != nil {
			return nil, err
		}
		f.wires = append(f.wires, uw)
	}
	return f, nil
}

// build checks cfg, sets its defaults and builds its network: New's and
// Check's start.
func build(cfg *Config) (*dataplane.Network, error) {
	if cfg.Scenario == nil || len(cfg.Switches) == 0 {
		return nil, errors.New("fabric: need a scenario and at least one switch")
	}
	if cfg.Speed == 0 {
		cfg.Speed = 1
	}
	if !(cfg.Speed > 0) {
		return nil, fmt.Errorf("fabric: speed %g must be positive", cfg.Speed)
	}
	if cfg.Speed < dataplane.MinSpeed || cfg.Speed > dataplane.MaxSpeed {
		// The engine-speed leaf could not hold it.
		return nil, fmt.Errorf("fabric: speed %g outside %g..%g", cfg.Speed, dataplane.MinSpeed, dataplane.MaxSpeed)
	}
	if cfg.PublishInterval <= 0 {
		cfg.PublishInterval = dataplane.DefaultInterval
	}
	if cfg.TargetDefinedInterval <= 0 {
		cfg.TargetDefinedInterval = subscribe.DefaultTargetDefinedInterval
	}
	served := make([]dataplane.Served, len(cfg.Switches))
	for i, s := range cfg.Switches {
		served[i] = dataplane.Served{Name: s.Name, Interfaces: s.Interfaces}
	}
	var wired []string
	for _, w := range cfg.Wires {
		wired = append(wired, w.Link)
	}
	return dataplane.BuildNetwork(cfg.Scenario, served, dataplane.BuildOptions{Wired: wired})
}

// schemaOf is the schema cfg's targets serve.
func schemaOf(cfg Config) (*schema.Schema, error) {
	if cfg.Schema != nil {
		return cfg.Schema, nil
	}
	return schema.New()
}

// ConfigError is a switch's startup or initial configuration that does
// not load: not JSON, or a value the schema or the dataplane refuses. It
// is the configuration's fault, not a failure of the start: Check returns
// it, so that a command refuses the configuration before it starts
// anything (lhcnp's exit status 2).
type ConfigError struct {
	// Switch is the switch whose configuration it is.
	Switch string
	// Startup is true for the switch's startup file (Config.StartupDir),
	// false for its initial configuration (Switch.Config).
	Startup bool
	// Err names the file, the line and column of the member at fault and
	// its path (startup.Locate).
	Err error
}

// Error is New's message for the same configuration.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("switch %s: %v", e.Switch, configLoadError(e.Startup, e.Err))
}

func (e *ConfigError) Unwrap() error { return e.Err }

// configLoadError is err, loading a switch's startup (startup true) or
// initial configuration, as New and Check say it.
func configLoadError(startup bool, err error) error {
	if startup {
		return fmt.Errorf("startup configuration %w (correct or remove the file, or start with --ignore-startup to start from the initial configuration)", err)
	}
	return fmt.Errorf("initial configuration %w", err)
}

// Check loads each switch's configuration as New will, its startup file
// (Config.StartupDir, unless IgnoreStartup) or else its initial Config,
// into a switch built for the check alone: nothing listens, and no file is
// locked, written or removed. A configuration that does not load is a
// *ConfigError (errors.As) with New's message, so that a command tells
// the configuration's mistakes from failures of the start (New's errors
// are both) and refuses them before it starts anything. A startup file
// that cannot be read is a plain error, as it is New's.
func Check(ctx context.Context, cfg Config) error {
	n, err := build(&cfg)
	if err != nil {
		return err
	}
	sch, err := schemaOf(cfg)
	if err != nil {
		return err
	}
	for i, s := range cfg.Switches {
		name, data, fromStartup := s.ConfigName, s.Config, false
		if cfg.StartupDir != "" && !cfg.IgnoreStartup {
			// Read, not startup.File.Read: that removes the temporary
			// files of a write, which a switch holding the file may be
			// making.
			path := startup.FileName(cfg.StartupDir, s.Name)
			b, err := os.ReadFile(path)
			switch {
			case err == nil:
				name, data, fromStartup = path, b, true
			case !errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("switch %s: startup configuration: %w", s.Name, err)
			}
		}
		if !fromStartup && len(data) == 0 {
			continue
		}
		sw := n.Switches[i]
		h := service.NewHandler(sch, store.New(), dataplane.NewBinding(sw.Group, sw.Node, sw.Ports, dataplane.WithSpeed(cfg.Speed)))
		if err := loadJSON(ctx, h, name, data); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &ConfigError{Switch: s.Name, Startup: fromStartup, Err: err}
		}
	}
	return nil
}

// loadConfig applies a switch's configuration at start: its startup file
// when it has one (and ignore is false), else its initial Config (which is
// then persisted), else none. A startup file that does not load is an
// error naming it, never a silent start from defaults.
func loadConfig(ctx context.Context, h *service.Handler, pub *dataplane.Publisher, s Switch, sf *startup.File, ignore bool) error {
	if sf != nil && !ignore {
		data, ok, err := sf.Read()
		if err != nil {
			return fmt.Errorf("startup configuration: %w", err)
		}
		if ok {
			if err := loadJSON(ctx, h, sf.Path(), data); err != nil {
				return configLoadError(true, err)
			}
			return nil
		}
	}
	if len(s.Config) > 0 {
		if err := loadJSON(ctx, h, s.ConfigName, s.Config); err != nil {
			return configLoadError(false, err)
		}
		return nil
	}
	if sf != nil {
		if err := sf.Remove(); err != nil {
			return fmt.Errorf("startup configuration: %w", err)
		}
	}
	return pub.PublishNow(ctx)
}

// loadJSON loads data, the configuration document of the file name, into
// h; an error names the file and the line of the member it is about.
func loadJSON(ctx context.Context, h *service.Handler, name string, data []byte) error {
	if err := startup.Check(name, data); err != nil {
		return err
	}
	return startup.Locate(name, data, h.LoadJSON(ctx, data))
}

// linkVNI numbers a link by its place in the scenario, from 1: the same
// in every process that loads the scenario.
func linkVNI(sc *scenario.Scenario, link string) uint32 {
	return uint32(slices.IndexFunc(sc.Links, func(l scenario.Link) bool { return l.Name == link }) + 1)
}

// hello judges a peer's keepalive: a different speed is refused; an
// earlier epoch is adopted (this engine jumps forward), a later one is
// left to the peer, which adopts ours.
func (f *Fabric) hello(link string, h udpwire.Hello) error {
	if h.Speed != f.cfg.Speed {
		return fmt.Errorf("peer runs at speed %g, this process at %g: start both with the same --speed", h.Speed, f.cfg.Speed)
	}
	f.clockMu.Lock()
	defer f.clockMu.Unlock()
	ours := f.net.Group.Epoch()
	if peer := time.Unix(0, h.Epoch); !ours.IsZero() && ours.Sub(peer) > clockTolerance {
		f.log.Info("fabric: adopting the peer's clock", "link", link, "epoch", peer, "ahead", ours.Sub(peer))
		f.net.Group.SetEpoch(peer)
	}
	return nil
}

// DefaultStartWait is how long Run waits for the wires before it starts
// the engine.
const DefaultStartWait = 10 * time.Second

// clockTolerance is the epoch difference (wall clock) below which two
// processes count as sharing a clock.
const clockTolerance = 100 * time.Microsecond

// Switches returns the served switches, in the order configured.
func (f *Fabric) Switches() []*Served { return f.switches }

// Switch returns the served switch name, or nil.
func (f *Fabric) Switch(name string) *Served {
	for _, s := range f.switches {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Wires returns the wires.
func (f *Fabric) Wires() []*udpwire.Wire { return f.wires }

// Sim returns the engine's partition 0 (its only one).
func (f *Fabric) Sim() *engine.Sim { return f.net.Sim }

// Group returns the engine Run paces.
func (f *Fabric) Group() *engine.Group { return f.net.Group }

// Network returns the built network.
func (f *Fabric) Network() *dataplane.Network { return f.net }

// EngineLag is the engine's lag behind the wall clock (the engine-lag
// leaf; a metrics gauge).
func (f *Fabric) EngineLag() time.Duration { return f.net.Group.Lag().Duration() }

// waitForWires returns when every wire is up, after StartWait, or when
// ctx ends.
func (f *Fabric) waitForWires(ctx context.Context) {
	if len(f.wires) == 0 {
		return
	}
	wait := f.cfg.StartWait
	if wait <= 0 {
		wait = DefaultStartWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		down := []string{}
		for _, w := range f.wires {
			if !w.Up() {
				down = append(down, w.Name())
			}
		}
		if len(down) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			f.log.Warn("fabric: starting with wires down", "links", down, "waited", wait)
			return
		case <-tick.C: // polling the wires' state
		}
	}
}

// Close releases the listeners of a fabric that will not Run, and the
// startup files' locks.
func (f *Fabric) Close() {
	for _, s := range f.switches {
		s.lis.Close()
	}
	f.releaseLocks()
}

func (f *Fabric) releaseLocks() {
	for _, l := range f.locks {
		l.Release()
	}
}

// Run paces the engine to the wall clock and serves gNMI on every switch
// and frames on every wire until ctx ends (nil then), or until a server,
// a wire or the engine fails.
func (f *Fabric) Run(ctx context.Context) error {
	defer f.releaseLocks()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	epoch := f.cfg.Epoch
	if epoch.IsZero() {
		epoch = time.Now()
	}
	f.net.Group.SetEpoch(epoch)
	f.stage("epoch")
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(f.switches)+len(f.wires)+1)
	for _, s := range f.switches {
		wg.Add(2)
		go func() {
			defer wg.Done()
			// Cancelled before this goroutine reached Serve, the server is
			// already stopped (below) and Serve says so: that is the
			// clean end asked for, not a failure.
			if err := s.srv.Serve(s.lis); err != nil && !(errors.Is(err, grpc.ErrServerStopped) && ctx.Err() != nil) {
				errs <- fmt.Errorf("switch %s: gnmi: %w", s.Name, err)
			}
			cancel()
		}()
		go func() {
			defer wg.Done()
			_ = s.pub.Run(ctx)
		}()
	}
	for _, w := range f.wires {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.stage("wires")
		f.waitForWires(ctx)
		f.stage("engine")
		err := f.net.Group.RunRealtime(ctx, f.cfg.Speed, engine.Never, runtime.GOMAXPROCS(0))
		if err != nil && ctx.Err() == nil && !errors.Is(err, engine.ErrStopped) {
			errs <- fmt.Errorf("engine: %w", err)
		}
		cancel()
	}()
	f.stage("running")
	<-ctx.Done()
	// Subscribe streams end only when their clients go: stop, not
	// GracefulStop, after giving unary RPCs a moment to finish.
	var stops sync.WaitGroup
	for _, s := range f.switches {
		stops.Add(1)
		go func() {
			defer stops.Done()
			stopped := make(chan struct{})
			go func() { s.srv.GracefulStop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(time.Second):
				s.srv.Stop()
			}
		}()
	}
	stops.Wait()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
