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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/server/auth"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/lhcnp/lhcnp/server/fabric"
	"github.com/lhcnp/lhcnp/server/target"
	"gopkg.in/yaml.v3"
)

// switchFile is the switch configuration file (docs/gnmi-target.md,
// docs/lab.md, examples/switch.yaml, examples/lab.yaml). Paths in it are
// relative to the file. It names one switch (switch, listen, config,
// interfaces) or a fabric of several (switches, wires).
type switchFile struct {
	// Switch is the switch of the scenario this process serves (one-switch
	// form).
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
	// Switches is the fabric form: every switch with its gNMI address.
	Switches []fileSwitch `yaml:"switches"`
	// Wires are the links that become UDP wires when their two ends run
	// in different processes (--switches); in one process they stay
	// in-engine links.
	Wires []fileWire `yaml:"wires"`
	// Keepalive, DeadAfter and MaxLate tune the wires (docs/lab.md).
	Keepalive time.Duration `yaml:"keepalive"`
	DeadAfter time.Duration `yaml:"dead_after"`
	MaxLate   time.Duration `yaml:"max_late"`
}

type fileSwitch struct {
	Name       string            `yaml:"name"`
	Listen     string            `yaml:"listen"`
	Config     string            `yaml:"config"`
	Interfaces map[string]string `yaml:"interfaces"`
}

type fileWire struct {
	// Link is the scenario's link; A and B the UDP addresses (ip:port) of
	// the processes running the link's a and b ends.
	Link string `yaml:"link"`
	A    string `yaml:"a"`
	B    string `yaml:"b"`
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
	switch {
	case f.Switch == "" && len(f.Switches) == 0:
		return nil, fmt.Errorf("%s: switch: missing (the name of the scenario's switch to run, or a switches: list)", path)
	case f.Switch != "" && len(f.Switches) > 0:
		return nil, fmt.Errorf("%s: switch and switches: give one switch or a list, not both", path)
	case len(f.Switches) > 0 && (f.Listen != "" || f.Config != "" || len(f.Interfaces) > 0):
		return nil, fmt.Errorf("%s: listen, config and interfaces belong to each entry of switches:", path)
	}
	if f.Scenario == "" {
		return nil, fmt.Errorf("%s: scenario: missing (the scenario file with the topology and traffic)", path)
	}
	if f.Switch != "" {
		f.Switches = []fileSwitch{{Name: f.Switch, Listen: f.Listen, Config: f.Config, Interfaces: f.Interfaces}}
	}
	seen := map[string]bool{}
	for i, s := range f.Switches {
		if s.Name == "" {
			return nil, fmt.Errorf("%s: switches[%d]: name missing", path, i)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%s: switches[%d]: switch %s listed twice", path, i, s.Name)
		}
		seen[s.Name] = true
	}
	for i, w := range f.Wires {
		if w.Link == "" || w.A == "" || w.B == "" {
			return nil, fmt.Errorf("%s: wires[%d]: need link, a and b (udp ip:port of each end)", path, i)
		}
	}
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	f.Scenario = rel(f.Scenario)
	for i := range f.Switches {
		f.Switches[i].Config = rel(f.Switches[i].Config)
	}
	return &f, nil
}

// runSwitch implements `lhcnp switch --config FILE`: the switches of a
// scenario (all those of the file, or --switches), their dataplane paced
// to the wall clock on one engine, a gNMI target each, and a UDP wire for
// every link of the file's wires whose other end another process runs.
// It returns when ctx ends (SIGINT, SIGTERM), after stopping the gRPC
// servers, the publishers, the wires and the engine.
func runSwitch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("switch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "switch or fabric configuration file (YAML); required")
	listen := fs.String("listen", "", "gNMI address, host:port, when one switch runs; HOST:0 gives every switch a free port (default: the file's listen, else 127.0.0.1:9339)")
	only := fs.String("switches", "", "comma-separated switches of the file to run in this process (default: all)")
	insecureFlag := fs.Bool("insecure", false, "serve gNMI without TLS (labs only)")
	cert := fs.String("tls-cert", "", "server certificate (PEM)")
	key := fs.String("tls-key", "", "server private key (PEM)")
	clientCA := fs.String("client-ca", "", "CA of client certificates: mutual TLS")
	users := fs.String("users", "", "users file (name:role:bcrypt-hash; see lhcnp passwd); none: anonymous read-write")
	speed := fs.Float64("speed", 0, "simulated seconds per wall-clock second (default: the file's speed, else 1)")
	every := fs.Duration("publish-interval", 0, "state publication interval (default: the file's, else 100ms)")
	capture := fs.String("capture", "", "directory for a pcap of every wire's frames (LINK.pcap)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics (host:port; default: off)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lhcnp switch --config FILE [--switches N1,N2] [--listen ADDR] (--insecure | --tls-cert F --tls-key F [--client-ca F]) [--users FILE] [--speed X] [--capture DIR] [--metrics ADDR]")
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
	run := f.Switches
	if *only != "" {
		run = nil
		for _, name := range strings.Split(*only, ",") {
			i := slices.IndexFunc(f.Switches, func(s fileSwitch) bool { return s.Name == name })
			if i < 0 {
				return usageError{fmt.Sprintf("--switches: %s has no switch %q", *cfgPath, name)}
			}
			run = append(run, f.Switches[i])
		}
	}
	if *listen != "" && len(run) != 1 && !strings.HasSuffix(*listen, ":0") {
		return usageError{"--listen needs exactly one switch, or port 0 (a free port each); the file gives each switch its listen"}
	}
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

	sc, err := scenario.LoadFile(f.Scenario)
	if err != nil {
		return err
	}
	cfg := fabric.Config{Scenario: sc, Speed: sp, PublishInterval: iv, Keepalive: f.Keepalive, DeadAfter: f.DeadAfter,
		MaxLate: engine.FromDuration(f.MaxLate), Log: slog.New(slog.NewTextHandler(stderr, nil))}
	for _, s := range run {
		fsw := fabric.Switch{Name: s.Name, Listen: firstOf(*listen, s.Listen, "127.0.0.1:9339"), Interfaces: s.Interfaces}
		if s.Config != "" {
			if fsw.Config, err = os.ReadFile(s.Config); err != nil {
				return err
			}
			fsw.ConfigName = s.Config
		}
		cfg.Switches = append(cfg.Switches, fsw)
	}
	wires, err := localWires(sc, f, run)
	if err != nil {
		return fmt.Errorf("%s: %w", *cfgPath, err)
	}
	for _, w := range wires {
		if *capture != "" {
			pf, err := os.Create(filepath.Join(*capture, w.Link+".pcap"))
			if err != nil {
				return err
			}
			defer pf.Close()
			w.Capture = pf
		}
		cfg.Wires = append(cfg.Wires, w)
	}

	var u *auth.Users
	if *users != "" {
		if u, err = auth.LoadUsers(*users); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stderr, "lhcnp switch: no --users: every client is the anonymous read-write user")
	}
	cfg.TargetOptions = []target.Option{target.WithAuth(auth.New(u))}
	if *insecureFlag {
		cfg.TargetOptions = append(cfg.TargetOptions, target.WithInsecure())
	} else {
		tc, err := auth.ServerTLS(*cert, *key, *clientCA)
		if err != nil {
			return err
		}
		cfg.TargetOptions = append(cfg.TargetOptions, target.WithTLS(tc))
	}
	sm, err := newSwitchMetrics(*metricsAddr, len(cfg.Switches), stdout)
	if err != nil {
		return err
	}
	defer sm.close()
	cfg.Metrics = sm.metrics()
	fab, err := fabric.New(ctx, cfg)
	if err != nil {
		return err
	}
	for _, s := range fab.Switches() {
		fmt.Fprintf(stdout, "lhcnp switch %s: gNMI on %s, %d interfaces, speed %g\n", s.Name, s.Addr(), len(s.Binding.Ports().Names()), sp)
	}
	for _, w := range cfg.Wires {
		fmt.Fprintf(stdout, "lhcnp switch: wire %s: udp %s <-> %s\n", w.Link, w.Listen, w.Peer)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	merr := make(chan error, 1)
	go func() { merr <- sm.serve(ctx) }()
	err = fab.Run(ctx)
	cancel()
	err = errors.Join(err, <-merr)
	for _, w := range fab.Wires() {
		st := w.Stats()
		fmt.Fprintf(stdout, "lhcnp switch: wire %s: sent %d frames (%d lost to a full queue), received %d (%d late, latest by %v; %d missing; %d while down; %d refused), link up %d times, down %d\n",
			w.Name(), st.TxFrames, st.TxDropped, st.RxFrames, st.Late, time.Duration(st.MaxLateNs), st.RxLost, st.RxDown, st.RxMalformed, st.Ups, st.Downs)
	}
	return err
}

// localWires returns the file's wires this process runs: those with one
// end among the nodes the switches in run reach without crossing a wire.
// A wire with both ends here is an ordinary link in the engine.
func localWires(sc *scenario.Scenario, f *switchFile, run []fileSwitch) ([]fabric.Wire, error) {
	var all []string
	for _, w := range f.Wires {
		all = append(all, w.Link)
	}
	served := make([]dataplane.Served, len(run))
	for i, s := range run {
		served[i] = dataplane.Served{Name: s.Name}
	}
	local := dataplane.Reachable(sc, served, all)
	var out []fabric.Wire
	for _, w := range f.Wires {
		i := slices.IndexFunc(sc.Links, func(l scenario.Link) bool { return l.Name == w.Link })
		if i < 0 {
			return nil, fmt.Errorf("wires: scenario %s has no link %q", sc.Name, w.Link)
		}
		lk := sc.Links[i]
		switch {
		case local[lk.A] && !local[lk.B]:
			out = append(out, fabric.Wire{Link: w.Link, Listen: w.A, Peer: w.B})
		case local[lk.B] && !local[lk.A]:
			out = append(out, fabric.Wire{Link: w.Link, Listen: w.B, Peer: w.A})
		}
	}
	return out, nil
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
