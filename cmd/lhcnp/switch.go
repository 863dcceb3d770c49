package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/server/auth"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/lhcnp/lhcnp/server/schema"
	"github.com/lhcnp/lhcnp/server/store"
	"github.com/lhcnp/lhcnp/server/subscribe"
	"github.com/lhcnp/lhcnp/server/target"
	"github.com/openconfig/gnmi/proto/gnmi"
	"gopkg.in/yaml.v3"
)

// switchFile is the switch configuration file (docs/gnmi-target.md,
// examples/switch.yaml). Paths in it are relative to the file.
type switchFile struct {
	// Switch is the switch of the scenario this process serves.
	Switch string `yaml:"switch"`
	// Scenario is the scenario file: topology, hosts and their traffic.
	Scenario string `yaml:"scenario"`
	// Config is the initial YANG configuration, RFC 7951 JSON (JSON_IETF).
	Config string `yaml:"config"`
	// Listen, Speed and PublishInterval are the defaults of the flags.
	Listen          string        `yaml:"listen"`
	Speed           float64       `yaml:"speed"`
	PublishInterval time.Duration `yaml:"publish_interval"`
	// Interfaces names the switch's interfaces: YANG name → link name.
	Interfaces map[string]string `yaml:"interfaces"`
}

func loadSwitchFile(path string) (*switchFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f switchFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Switch == "" {
		return nil, fmt.Errorf("%s: switch: missing (the name of the scenario's switch to run)", path)
	}
	if f.Scenario == "" {
		return nil, fmt.Errorf("%s: scenario: missing (the scenario file with the topology and traffic)", path)
	}
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	f.Scenario, f.Config = rel(f.Scenario), rel(f.Config)
	return &f, nil
}

// runSwitch implements `lhcnp switch --config FILE`: one switch of a
// scenario, its dataplane paced to the wall clock, and its gNMI target.
// It returns when ctx ends (SIGINT, SIGTERM), after stopping the gRPC
// server, the publisher and the engine.
func runSwitch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("switch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "switch configuration file (YAML); required")
	listen := fs.String("listen", "", "gNMI address, host:port (default: the file's listen, else 127.0.0.1:9339)")
	insecureFlag := fs.Bool("insecure", false, "serve gNMI without TLS (labs only)")
	cert := fs.String("tls-cert", "", "server certificate (PEM)")
	key := fs.String("tls-key", "", "server private key (PEM)")
	clientCA := fs.String("client-ca", "", "CA of client certificates: mutual TLS")
	users := fs.String("users", "", "users file (name:role:bcrypt-hash; see lhcnp passwd); none: anonymous read-write")
	speed := fs.Float64("speed", 0, "simulated seconds per wall-clock second (default: the file's speed, else 1)")
	every := fs.Duration("publish-interval", 0, "state publication interval (default: the file's, else 100ms)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics (host:port; default: off)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lhcnp switch --config FILE [--listen ADDR] (--insecure | --tls-cert F --tls-key F [--client-ca F]) [--users FILE] [--speed X]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *cfgPath == "" {
		fs.Usage()
		return usageError{"--config FILE is required"}
	}
	if *insecureFlag == (*cert != "") || (*cert == "") != (*key == "") {
		fs.Usage()
		return usageError{"choose --insecure or --tls-cert with --tls-key"}
	}
	if *clientCA != "" && *insecureFlag {
		return usageError{"--client-ca needs TLS"}
	}
	f, err := loadSwitchFile(*cfgPath)
	if err != nil {
		return err
	}
	addr := firstOf(*listen, f.Listen, "127.0.0.1:9339")
	sp := *speed
	if sp == 0 {
		sp = f.Speed
	}
	if sp == 0 {
		sp = 1
	}
	if sp < 0 {
		return usageError{"--speed must be positive"}
	}
	iv := *every
	if iv == 0 {
		iv = f.PublishInterval
	}
	if iv == 0 {
		iv = dataplane.DefaultInterval
	}

	sc, err := scenario.LoadFile(f.Scenario)
	if err != nil {
		return err
	}
	sw, err := dataplane.Build(sc, f.Switch, dataplane.BuildOptions{Interfaces: f.Interfaces})
	if err != nil {
		return err
	}
	sch, err := schema.New()
	if err != nil {
		return err
	}
	st := store.New()
	b := dataplane.NewBinding(sw.Sim, sw.Node, sw.Ports, dataplane.WithSpeed(sp))
	pub := dataplane.NewPublisher(sch, st, b, dataplane.WithInterval(iv))
	h := target.NewHandler(sch, st, b, target.WithStatePublisher(pub), target.WithLogger(slog.New(slog.NewTextHandler(stderr, nil))))
	if f.Config != "" {
		data, err := os.ReadFile(f.Config)
		if err != nil {
			return err
		}
		if err := h.LoadJSON(ctx, data); err != nil {
			return fmt.Errorf("%s: %w", f.Config, err)
		}
	} else if err := pub.PublishNow(ctx); err != nil {
		return err
	}

	var u *auth.Users
	if *users != "" {
		if u, err = auth.LoadUsers(*users); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stderr, "lhcnp switch: no --users: every client is the anonymous read-write user")
	}
	sub := subscribe.New(st,
		subscribe.WithOrigins(schema.Origin, schema.OpenConfigOrigin),
		subscribe.WithPathRewrite(schema.StripModules),
		subscribe.WithPathValidator(func(p *gnmi.Path) error { _, err := sch.Resolve(p); return err }),
		subscribe.WithEncoder(gnmi.Encoding_JSON_IETF, sch.ValueEncoder(gnmi.Encoding_JSON_IETF)),
		subscribe.WithEncoder(gnmi.Encoding_JSON, sch.ValueEncoder(gnmi.Encoding_JSON)))
	sm, err := newSwitchMetrics(*metricsAddr, h, sub, func() time.Duration { return sw.Sim.Lag().Duration() }, stdout)
	if err != nil {
		return err
	}
	defer sm.close()
	opts := append([]target.Option{
		target.WithAuth(auth.New(u)),
		target.WithCapabilities(h), target.WithGet(h), target.WithSet(h),
		target.WithSubscribe(sub),
	}, sm.options()...)
	if *insecureFlag {
		opts = append(opts, target.WithInsecure())
	} else {
		tc, err := auth.ServerTLS(*cert, *key, *clientCA)
		if err != nil {
			return err
		}
		opts = append(opts, target.WithTLS(tc))
	}
	srv, err := target.New(opts...)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "lhcnp switch %s: gNMI on %s, %d interfaces, speed %g\n", f.Switch, lis.Addr(), len(sw.Ports.Names()), sp)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(4)
	go func() {
		defer wg.Done()
		if err := sm.serve(ctx); err != nil {
			errs <- err
		}
	}()
	go func() {
		defer wg.Done()
		if err := srv.Serve(lis); err != nil {
			errs <- fmt.Errorf("gnmi: %w", err)
		}
		cancel()
	}()
	go func() {
		defer wg.Done()
		if err := sw.Run(ctx, sp); err != nil {
			errs <- fmt.Errorf("engine: %w", err)
		}
		cancel()
	}()
	go func() {
		defer wg.Done()
		_ = pub.Run(ctx)
	}()
	<-ctx.Done()
	// Subscribe streams end only when their clients go: stop, not
	// GracefulStop, after giving unary RPCs a moment to finish.
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Second):
		srv.Stop()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// runPasswd implements `lhcnp passwd --user NAME [--role read-only|read-write]`:
// it reads the password from the first line of stdin and prints the users
// file line ("name:role:bcrypt-hash") for `lhcnp switch --users`.
func runPasswd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "user name; required")
	role := fs.String("role", "read-only", "read-only (ro) or read-write (rw)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" || fs.NArg() > 0 {
		fs.Usage()
		return usageError{"want: passwd --user NAME [--role ROLE], the password on stdin"}
	}
	r, err := auth.ParseRole(*role)
	if err != nil {
		return usageError{err.Error()}
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	out, err := auth.PasswdLine(*user, r, strings.TrimRight(line, "\r\n"))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, out)
	return err
}
