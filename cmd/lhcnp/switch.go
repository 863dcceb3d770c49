package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/internal/hostport"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/lhcnp/lhcnp/server/fabric"
	"github.com/lhcnp/lhcnp/server/startup"
)

// switchFile is the switch configuration file (docs/gnmi-target.md,
// docs/lab.md, examples/switch.yaml, examples/lab.yaml). Paths in it are
// relative to the file. It names one switch (switch, listen, config,
// interfaces) or a fabric of several (switches, wires). Every scalar key is
// also a flag and an LHCNP_SWITCH_ variable (internal/cliconf): flags win
// over variables, variables over the file; the lists and the interfaces map
// are file only.
type switchFile struct {
	// Switch is the switch of the scenario this process serves (one-switch
	// form).
	Switch string `yaml:"switch" help:"the scenario's switch to run (one-switch form; a fabric file lists switches: instead)"`
	// Scenario is the scenario file: topology, hosts and their traffic.
	Scenario string `yaml:"scenario" help:"scenario file: topology, hosts and their traffic"`
	// Config is the initial YANG configuration, RFC 7951 JSON (JSON_IETF):
	// what a switch runs on its first start, or with IgnoreStartup. Its
	// flag is --initial-config: --config is the switch file.
	Config string `yaml:"config" flag:"initial-config" help:"initial YANG configuration of the one switch, RFC 7951 JSON (variable LHCNP_SWITCH_CONFIG)"`
	// Listen is the one switch's gNMI address; as a flag or variable it
	// overrides the file's addresses (one switch run, or HOST:0). Its
	// default, switchListen, is applied after the layers (an empty Listen
	// overrides nothing) and added to the help by parseSwitchArgs.
	Listen string `yaml:"listen" help:"gNMI address, host:port; over a fabric file: when one switch runs, or HOST:0 for a free port each"`
	// StateDir keeps each switch's startup configuration, NAME.json: the
	// configuration it was last committed with, which the next start
	// loads instead of Config (package server/startup). By default it is
	// lhcnp-switch/SCENARIO (the scenario's name), so that the n1 of one
	// scenario never starts from the n1 of another. IgnoreStartup starts
	// from Config instead, and keeps that.
	StateDir      string `yaml:"state_dir" help:"directory of the switches' startup configurations (NAME.json: the configuration each was last committed with, loaded at the next start; default lhcnp-switch/SCENARIO, the scenario's name)"`
	IgnoreStartup bool   `yaml:"ignore_startup" help:"start every switch from its initial configuration (config), not from its startup configuration in state_dir, and keep that"`
	// Speed and PublishInterval pace the engine and the publishers.
	Speed           float64       `yaml:"speed" help:"simulated seconds per wall-clock second"`
	PublishInterval time.Duration `yaml:"publish_interval" help:"state publication interval"`
	// TargetDefinedInterval is how often each target samples counters and
	// gauges for a TARGET_DEFINED subscription (gnmic's default mode, the
	// collector's default subscription).
	TargetDefinedInterval time.Duration `yaml:"target_defined_interval" help:"how often a TARGET_DEFINED subscription samples counters and gauges"`
	// Interfaces names the switch's interfaces: YANG name → link name.
	Interfaces map[string]string `yaml:"interfaces"`
	// Switches is the fabric form: every switch with its gNMI address.
	Switches []fileSwitch `yaml:"switches"`
	// Wires are the links that become UDP wires when their two ends run
	// in different processes (--switches); in one process they stay
	// in-engine links.
	Wires []fileWire `yaml:"wires"`
	// Keepalive, DeadAfter and MaxLate tune the wires (docs/lab.md).
	Keepalive time.Duration `yaml:"keepalive" help:"wires: keepalive period (0: the wire's default)"`
	DeadAfter time.Duration `yaml:"dead_after" help:"wires: link down after this long without a frame (0: the wire's default)"`
	MaxLate   time.Duration `yaml:"max_late" help:"wires: frames later than this are dropped (0: the wire's default)"`

	// Run chooses among the file's switches (all when empty); its flag is
	// --switches, the key switches being the file's list.
	Run string `yaml:"run" flag:"switches" help:"comma-separated switches of the file to run in this process (default: all; variable LHCNP_SWITCH_RUN)"`
	// The transport: plain gRPC (labs only) or TLS, mutual with ClientCA;
	// Users is the users file (none: anonymous read-write, so TLS needs
	// Users or ClientCA).
	Insecure bool   `yaml:"insecure" help:"serve gNMI without TLS (labs only)"`
	TLSCert  string `yaml:"tls_cert" help:"server certificate (PEM)"`
	TLSKey   string `yaml:"tls_key" help:"server private key (PEM)"`
	ClientCA string `yaml:"client_ca" help:"CA of client certificates: mutual TLS"`
	Users    string `yaml:"users" help:"users file (name:role:bcrypt-hash; see lhcnp passwd); none: anonymous read-write, so TLS needs users or client_ca"`
	// The limits of each switch's gNMI target (each its own, whatever
	// the other switches of the process hold): one more Subscribe stream,
	// in all or of one user (with users), is RESOURCE_EXHAUSTED; a
	// connection's RPC over its limit waits in the client.
	MaxStreams              int `yaml:"max_streams" help:"Subscribe streams open at once on each switch's gNMI target, at most"`
	MaxStreamsPerUser       int `yaml:"max_streams_per_user" help:"Subscribe streams one user may have open at once on each switch, at most (with users)"`
	MaxStreamsPerConnection int `yaml:"max_streams_per_connection" help:"RPCs one gNMI connection may have open at once, at most (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS)"`
	// The outputs: a pcap per wire, Prometheus metrics.
	Capture string `yaml:"capture" help:"directory for a pcap of every wire's frames (LINK.pcap)"`
	Metrics string `yaml:"metrics" help:"serve Prometheus metrics at http://ADDR/metrics (host:port; default: off)"`
}

// DefaultSwitchStateDir is where lhcnp switch keeps the startup
// configurations by default, relative to the working directory: one
// directory per scenario below it.
const DefaultSwitchStateDir = "lhcnp-switch"

// defaultStateDir is the state directory of a scenario's switches when
// none is given.
func defaultStateDir(scenarioName string) string {
	name := scenarioName
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		name = "scenario"
	}
	return filepath.Join(DefaultSwitchStateDir, name)
}

// switchEnvPrefix is the variables' prefix of lhcnp switch.
const switchEnvPrefix = "LHCNP_SWITCH_"

func defaultSwitchFile() switchFile {
	return switchFile{Speed: 1, PublishInterval: dataplane.DefaultInterval, TargetDefinedInterval: subscribe.DefaultTargetDefinedInterval, MaxStreams: auth.DefaultMaxStreams,
		MaxStreamsPerUser: auth.DefaultMaxStreamsPerUser, MaxStreamsPerConnection: service.DefaultMaxConcurrentStreams}
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

// loadSwitchFile reads a switch or fabric file alone: no flags, no
// variables (lhcnp lab, tests). cc locates later errors of its keys.
func loadSwitchFile(path string) (*switchFile, *cliconf.Config, error) {
	f := defaultSwitchFile()
	cc, err := cliconf.Register(flag.NewFlagSet("switch", flag.ContinueOnError), &f)
	if err != nil {
		return nil, nil, err
	}
	if err := cc.Load(path); err != nil {
		return nil, nil, err
	}
	if err := f.resolve(path, cc); err != nil {
		return nil, nil, err
	}
	return &f, cc, nil
}

// fileOfKeyError is err, an error of the file that the switch file's key
// names (scenario, switches[i].config), at that key: each line of err,
// which names the file and its own line where it has one, after
// "FILE:LINE:COL: KEY: " (cc.Locate), an error of the configuration.
func fileOfKeyError(cc *cliconf.Config, key string, err error) error {
	return cc.Locate(errors.New(key + ": " + strings.ReplaceAll(err.Error(), "\n", "\n"+key+": ")))
}

// readConfig reads the initial configuration of s, one of f's switches,
// and checks its JSON syntax (startup.Check: the file's line and column),
// an error located at s's key config: the schema's checks are the
// switch's, at its start.
func (f *switchFile) readConfig(s fileSwitch, cc *cliconf.Config) ([]byte, error) {
	data, err := os.ReadFile(s.Config)
	if err == nil {
		err = startup.Check(s.Config, data)
	}
	if err != nil {
		return nil, fileOfKeyError(cc, f.switchKey(s.Name, "config"), err)
	}
	return data, nil
}

// checkConfigs loads the startup or initial configuration of each switch
// of fc, f's, as the fabric will at its start (fabric.Check): one it
// refuses is a mistake of the configuration (exit status 2, exitStatus),
// an initial configuration's at the key that names its file, as
// readConfig's are, a startup file's (no key names it) in the fabric's
// words. The fabric's start said them after everything else had started,
// a failure (exit status 1).
func (f *switchFile) checkConfigs(ctx context.Context, fc fabric.Config, cc *cliconf.Config) error {
	err := fabric.Check(ctx, fc)
	if ce, ok := errors.AsType[*fabric.ConfigError](err); ok && !ce.Startup {
		return fileOfKeyError(cc, f.switchKey(ce.Switch, "config"), ce.Err)
	}
	return err
}

// missingFlagError is a usage error for a flag the command line lacks,
// printed after the usage (parseSwitchArgs); resolve's other usage
// errors (a refused combination, a bad value of a flag or a variable)
// stand alone.
type missingFlagError struct{ msg string }

func (e missingFlagError) Error() string { return e.msg }

// resolve checks the layered configuration (loaded by cc from path, ""
// for none) and fills Switches in the one-switch form. Paths from the file
// are made relative to it; those from flags and variables stay as given.
func (f *switchFile) resolve(path string, cc *cliconf.Config) error {
	missing := func(key, what string) error {
		if path == "" {
			return missingFlagError{fmt.Sprintf("--config FILE, or --%s: %s, is required", cc.Flag(key), what)}
		}
		return cc.Locate(fmt.Errorf("%s: missing (%s)", key, what))
	}
	fabricForm := len(f.Switches) > 0
	switch {
	case f.Switch == "" && !fabricForm:
		return missing("switch", "the name of the scenario's switch to run, or a switches: list")
	case f.Switch != "" && fabricForm && cc.InFile("switch"):
		return cc.Locate(errors.New("switch: give one switch or a list (switches), not both"))
	case f.Switch != "" && fabricForm:
		return keysError(cc, path, "the file lists switches: choose among them with --switches", "switch", "switches")
	case fabricForm && (cc.InFile("listen") || cc.InFile("config") || len(f.Interfaces) > 0):
		key := "interfaces"
		for _, k := range []string{"listen", "config"} {
			if cc.InFile(k) {
				key = k
				break
			}
		}
		return cc.Locate(fmt.Errorf("%s: listen, config and interfaces belong to each entry of switches:", key))
	case fabricForm && f.Config != "":
		return keysError(cc, path, "the file lists switches: each entry has its own config", "config", "switches")
	}
	if f.Scenario == "" {
		return missing("scenario", "the scenario file with the topology and traffic")
	}
	// A bad value of the file is named at its line; of a flag or a
	// variable, by it (a usage error).
	bad := func(key string, v any, why string) error { return badValue(cc, key, v, why) }
	switch {
	case !(f.Speed > 0):
		return bad("speed", f.Speed, "must be positive")
	case f.Speed < dataplane.MinSpeed || f.Speed > dataplane.MaxSpeed:
		// The fabric refuses it, naming neither the key nor the file.
		return bad("speed", f.Speed, fmt.Sprintf("outside %g..%g", dataplane.MinSpeed, dataplane.MaxSpeed))
	case f.PublishInterval <= 0:
		// The fabric would publish at its default instead.
		return bad("publish_interval", f.PublishInterval, "must be positive")
	case f.TargetDefinedInterval <= 0:
		// The fabric would sample at its default instead.
		return bad("target_defined_interval", f.TargetDefinedInterval, "must be positive")
	}
	for _, l := range []struct {
		key string
		n   int
	}{{"max_streams", f.MaxStreams}, {"max_streams_per_user", f.MaxStreamsPerUser}, {"max_streams_per_connection", f.MaxStreamsPerConnection}} {
		if err := checkLimit(l.n); err != nil {
			return bad(l.key, l.n, err.Error())
		}
	}
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for key, p := range map[string]*string{"scenario": &f.Scenario, "tls_cert": &f.TLSCert, "tls_key": &f.TLSKey,
		"client_ca": &f.ClientCA, "users": &f.Users, "capture": &f.Capture, "state_dir": &f.StateDir} {
		if cc.Origin(key) == path {
			*p = rel(*p)
		}
	}
	if f.Switch != "" {
		c := f.Config
		if cc.Origin("config") == path {
			c = rel(c)
		}
		f.Switches = []fileSwitch{{Name: f.Switch, Listen: f.Listen, Config: c, Interfaces: f.Interfaces}}
	} else {
		for i := range f.Switches {
			f.Switches[i].Config = rel(f.Switches[i].Config)
		}
	}
	seen := map[string]bool{}
	for i, s := range f.Switches {
		if s.Name == "" {
			return cc.Locate(fmt.Errorf("switches[%d]: name missing", i))
		}
		if seen[s.Name] {
			return cc.Locate(fmt.Errorf("switches[%d].name: switch %q listed twice", i, s.Name))
		}
		seen[s.Name] = true
	}
	for i, w := range f.Wires {
		if w.Link == "" || w.A == "" || w.B == "" {
			return cc.Locate(fmt.Errorf("wires[%d]: need link, a and b (udp ip:port of each end)", i))
		}
	}
	return f.checkAddresses(cc)
}

// checkAddresses checks every address of the configuration is host:port
// with a port net.Listen takes, before anything listens: net.Listen's
// "address 99999: invalid port" named neither the key nor the file. A
// wire's ends need a port other than 0: each is the other's destination. The
// one-switch form's listen and metrics may come from a flag or a
// variable, named then; the lists' addresses come from the file.
func (f *switchFile) checkAddresses(cc *cliconf.Config) error {
	var errs []error
	for _, key := range []string{"listen", "metrics"} {
		addr := f.Listen
		if key == "metrics" {
			addr = f.Metrics
		}
		if err := hostport.Check("tcp", addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: %w", key, addr, err))
		}
	}
	if f.Switch == "" { // the one-switch form's is listen, above
		for i, s := range f.Switches {
			if err := hostport.Check("tcp", s.Listen); err != nil {
				errs = append(errs, fmt.Errorf("switches[%d].listen: %q: %w", i, s.Listen, err))
			}
		}
	}
	for i, w := range f.Wires {
		for _, end := range [][2]string{{"a", w.A}, {"b", w.B}} {
			if err := hostport.Check("udp", end[1]); err != nil {
				errs = append(errs, fmt.Errorf("wires[%d].%s: %q: %w", i, end[0], end[1], err))
			} else if _, port, _ := net.SplitHostPort(end[1]); port == "0" {
				// A free port would bind somewhere its far end cannot know,
				// and a far end on port 0 is nowhere to send to.
				errs = append(errs, fmt.Errorf("wires[%d].%s: %q: port 0: each end of a wire needs a fixed port, the other end sends to it", i, end[0], end[1]))
			}
		}
	}
	return cc.Locate(errors.Join(errs...))
}

// checkScenario checks the switches to run and the file's wires against
// the scenario (dataplane.Check, as the fabric does) before anything
// listens, naming each error's key (switch or switches[i].name,
// interfaces.Y or switches[i].interfaces.Y, wires[i].link), located by
// cc: the dataplane's errors name what it was given, not the file's keys.
func (f *switchFile) checkScenario(sc *scenario.Scenario, run []fileSwitch, cc *cliconf.Config) error {
	served := make([]dataplane.Served, len(run))
	for i, s := range run {
		served[i] = dataplane.Served{Name: s.Name, Interfaces: s.Interfaces}
	}
	var wired []string
	for _, w := range f.Wires {
		wired = append(wired, w.Link)
	}
	return f.locate(dataplane.Check(sc, served, wired), run, cc)
}

// locate names the key of each *dataplane.KeyError in err, dataplane.Check's
// of the switches run and every wire of the file, located by cc; err is
// left as it is when it holds none.
func (f *switchFile) locate(err error, run []fileSwitch, cc *cliconf.Config) error {
	var kes []*dataplane.KeyError
	var walk func(error)
	walk = func(e error) {
		var ke *dataplane.KeyError
		switch x := e.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(e, &ke) {
				kes = append(kes, ke)
			}
		}
	}
	walk(err)
	if len(kes) == 0 {
		return err
	}
	var errs []error
	for _, ke := range kes {
		var key string
		msg := ke.Err.Error()
		switch {
		case ke.Served >= 0:
			sub := "name"
			if ke.Interface != "" {
				sub = "interfaces." + ke.Interface
			}
			key = f.switchKey(run[ke.Served].Name, sub)
		case ke.Wired >= 0:
			key = fmt.Sprintf("wires[%d].link", ke.Wired)
			if ke.First >= 0 {
				msg = fmt.Sprintf("link %q is wires[%d] already", f.Wires[ke.Wired].Link, ke.First)
			}
		default:
			return err
		}
		errs = append(errs, fmt.Errorf("%s: %s", key, msg))
	}
	return cc.Locate(errors.Join(errs...))
}

// switchKey is the key of sub (name, interfaces.Y, ...) of the switch
// name: in the one-switch form switch or the top-level key, else under
// its entry of switches.
func (f *switchFile) switchKey(name, sub string) string {
	if f.Switch != "" {
		if sub == "name" {
			return "switch"
		}
		return sub
	}
	i := slices.IndexFunc(f.Switches, func(s fileSwitch) bool { return s.Name == name })
	return fmt.Sprintf("switches[%d].%s", i, sub)
}

// toRun returns the switches of f this process runs (run, else all), and
// refuses one listen other than port 0 over several of them.
func (f *switchFile) toRun(cc *cliconf.Config, config string) ([]fileSwitch, error) {
	run := f.Switches
	if f.Run != "" {
		run = nil
		for _, name := range strings.Split(f.Run, ",") {
			i := slices.IndexFunc(f.Switches, func(s fileSwitch) bool { return s.Name == name })
			if i < 0 {
				return nil, cc.Locate(fmt.Errorf("run: %s has no switch %q", sourceOf(config), name))
			}
			if slices.ContainsFunc(run, func(s fileSwitch) bool { return s.Name == name }) {
				// The list's fault, not the file's switches: named here,
				// where the dataplane would say the file's switch is
				// served twice.
				return nil, cc.Locate(fmt.Errorf("run: switch %q listed twice", name))
			}
			run = append(run, f.Switches[i])
		}
	}
	if f.Listen != "" && len(run) != 1 && !strings.HasSuffix(f.Listen, ":0") {
		return nil, keysError(cc, config, "a listen address other than port 0 (a free port each) needs exactly one switch to run; the file gives each switch its listen", "listen", "run")
	}
	return run, nil
}

// addressesApart refuses two listeners of the process on one port
// (listenersApart), before anything starts: the gNMI target of each
// switch of run (f.Listen over the file's, else switchListen) and the
// metrics, each named at its key and where its value came from. The second
// failed the start with "bind: address already in use", naming the switch
// but not the keys. The wires are UDP, apart from these (wiresApart).
func (f *switchFile) addressesApart(cc *cliconf.Config, config string, run []fileSwitch) error {
	var ls []listener
	for _, s := range run {
		l := listener{firstOf(f.Listen, s.Listen, switchListen), namedKey(cc, config, "listen")}
		switch key := f.switchKey(s.Name, "listen"); {
		case f.Listen != "" || f.Switch != "": // listen's, of any layer, or its default
		case s.Listen == "":
			l.named = key + " (default)"
		default:
			l.named = namedKey(cc, config, key)
		}
		ls = append(ls, l)
	}
	if f.Metrics != "" {
		ls = append(ls, listener{f.Metrics, namedKey(cc, config, "metrics")})
	}
	return listenersApart("lhcnp switch's", ls)
}

// wiresApart refuses two ends of the wires this process runs (its own and
// their far ends) on one UDP address (wireEndsApart), before anything
// starts, each named at its key of the file loaded by cc.
func wiresApart(cc *cliconf.Config, config string, wires []localWire) error {
	var ends []wireEnd
	for _, w := range wires {
		ends = append(ends, wireEnd{w.Listen, namedKey(cc, config, w.key), w.Link, true},
			wireEnd{w.Peer, namedKey(cc, config, w.peerKey), w.Link, false})
	}
	return wireEndsApart(ends)
}

// switchListen is a switch's gNMI address when neither a flag, a variable
// nor the file gives one.
const switchListen = "127.0.0.1:9339"

// parseSwitchArgs parses lhcnp switch's arguments and layers the switch
// file (--config, if any) < the LHCNP_SWITCH_ variables of environ < the
// flags, checked and resolved; it returns the --config path too.
func parseSwitchArgs(args []string, environ func() []string, stderr io.Writer) (*switchFile, string, *cliconf.Config, error) {
	f := defaultSwitchFile()
	c, err := newCLI(cliSpec{name: "switch", prefix: switchEnvPrefix,
		configHelp: "switch or fabric configuration file (YAML); paths in it are relative to it",
		usage: []string{"usage: lhcnp switch (--config FILE | --switch NAME --scenario FILE) [--switches N1,N2] [--listen ADDR] (--insecure | --tls-cert F --tls-key F [--client-ca F]) [--users FILE] [--speed X] [--state-dir DIR] [--ignore-startup] [--capture DIR] [--metrics ADDR] [--KEY VALUE ...]",
			"Every scalar key of the file is a flag and an " + switchEnvPrefix + " variable (the key upper-cased: LHCNP_SWITCH_PUBLISH_INTERVAL);",
			"flags win over variables, variables over the file. switches:, wires: and interfaces: are file only;",
			"the key config (initial YANG configuration) is the flag --initial-config, --config being the file;",
			"the key run (the switches to run) is the flag --switches."}},
		&f, environ, stderr)
	if err != nil {
		return nil, "", nil, err
	}
	// The flag's own default is empty (see Listen): the help says which
	// address that means.
	c.fs.Lookup("listen").Usage += " (default " + switchListen + ")"
	if err := c.parse(args, nil); err != nil {
		return nil, "", nil, err
	}
	// The usage is printed for a flag missing, not for a refused
	// combination of flags or a bad value: its 45 lines would bury the
	// one line that says what is wrong.
	transport := func() usageError {
		return keysError(c.cc, c.config, "choose --insecure or --tls-cert with --tls-key", "insecure", "tls_cert", "tls_key")
	}
	if !f.Insecure && f.TLSCert == "" && f.TLSKey == "" {
		c.fs.Usage()
		return nil, "", nil, transport()
	}
	if f.Insecure == (f.TLSCert != "") || (f.TLSCert == "") != (f.TLSKey == "") {
		return nil, "", nil, transport()
	}
	if f.ClientCA != "" && f.Insecure {
		return nil, "", nil, keysError(c.cc, c.config, "a client CA needs TLS", "client_ca", "insecure")
	}
	// TLS that lets anyone in as the read-write user would look secure and
	// be open: an operator who chose TLS wants clients identified, by a
	// password or a certificate.
	if !f.Insecure && f.Users == "" && f.ClientCA == "" {
		return nil, "", nil, keysError(c.cc, c.config, "TLS without users or a client CA would let every client Set as the anonymous read-write user: give a users file (lhcnp passwd), a client CA, or both",
			"tls_cert", "users", "client_ca")
	}
	if err := f.resolve(c.config, c.cc); err != nil {
		if m, ok := err.(missingFlagError); ok {
			return nil, "", nil, c.usageError(m.msg)
		}
		return nil, "", nil, err
	}
	return &f, c.config, c.cc, nil
}

// runSwitch implements `lhcnp switch [--config FILE]`: the switches of a
// scenario (all those of the file, or --switches), their dataplane paced
// to the wall clock on one engine, a gNMI target each, and a UDP wire for
// every link of the file's wires whose other end another process runs.
// It returns when ctx ends (SIGINT, SIGTERM), after stopping the gRPC
// servers, the publishers, the wires and the engine.
func runSwitch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, config, cc, err := parseSwitchArgs(args, os.Environ, stderr)
	if err != nil {
		return err
	}
	warnGRPCBinaryLog(os.Getenv, stderr, "lhcnp switch")
	listen := f.Listen // over the file's addresses, from any layer
	run, err := f.toRun(cc, config)
	if err != nil {
		return err
	}
	sp, iv := f.Speed, f.PublishInterval

	sc, err := scenario.LoadFile(f.Scenario)
	if err != nil { // the scenario loader names the file it opens, not the key
		return fileOfKeyError(cc, "scenario", err)
	}
	if err := f.checkScenario(sc, run, cc); err != nil {
		return err
	}
	if err := f.addressesApart(cc, config, run); err != nil {
		return err
	}
	if f.StateDir == "" {
		f.StateDir = defaultStateDir(sc.Name)
	}
	cfg := fabric.Config{Scenario: sc, Speed: sp, PublishInterval: iv, TargetDefinedInterval: f.TargetDefinedInterval, Keepalive: f.Keepalive, DeadAfter: f.DeadAfter,
		MaxLate: engine.FromDuration(f.MaxLate), Log: textLog(stderr, false),
		StartupDir: f.StateDir, IgnoreStartup: f.IgnoreStartup}
	for _, s := range run {
		fsw := fabric.Switch{Name: s.Name, Listen: firstOf(listen, s.Listen, switchListen), Interfaces: s.Interfaces}
		if s.Config != "" {
			if fsw.Config, err = f.readConfig(s, cc); err != nil {
				return err
			}
			fsw.ConfigName = s.Config
		}
		cfg.Switches = append(cfg.Switches, fsw)
	}
	wires, err := localWires(sc, f, run, cc)
	if err != nil {
		return err
	}
	if err := wiresApart(cc, config, wires); err != nil {
		return err
	}
	for _, w := range wires {
		cfg.Wires = append(cfg.Wires, w.Wire)
	}
	// Before anything starts (a capture file, the line on users, a
	// listener): the fabric would refuse them at its start, as a failure.
	if err := f.checkConfigs(ctx, cfg, cc); err != nil {
		return err
	}
	ga, err := loadGNMIAuth("", f.Users, f.Insecure, f.TLSCert, f.TLSKey, f.ClientCA)
	if err != nil {
		return cc.Locate(err)
	}
	if f.Capture != "" {
		// Created as sim run's --out is: a directory named for this run's
		// pcaps need not exist yet.
		if err := os.MkdirAll(f.Capture, 0o755); err != nil {
			return err
		}
		for i, w := range cfg.Wires {
			pf, err := os.Create(filepath.Join(f.Capture, w.Link+".pcap"))
			if err != nil {
				return err
			}
			defer pf.Close()
			cfg.Wires[i].Capture = pf
		}
	}

	u := ga.users
	var addrs []string
	for _, s := range cfg.Switches {
		addrs = append(addrs, s.Listen)
	}
	if f.Users != "" {
		if f.Insecure {
			warnClearPasswords(ctx, lookupHost, stderr, "lhcnp switch: warning: --users over --insecure", "--tls-cert, --tls-key", addrs...)
		}
	} else if f.Insecure {
		noticeAnonymousWrites(ctx, lookupHost, stderr, "lhcnp switch: warning: no --users over --insecure",
			"lhcnp switch: no --users: every client is the anonymous read-write user",
			"can Get, Subscribe and Set the switch", "--users (lhcnp passwd), TLS (--tls-cert, --tls-key) or a loopback address", addrs...)
	} else {
		fmt.Fprintln(stderr, "lhcnp switch: no --users: every client with a certificate of --client-ca is the anonymous read-write user")
	}
	creds := auth.New(u)
	limits := gnmiLimits{f.MaxStreams, f.MaxStreamsPerUser, f.MaxStreamsPerConnection}
	cfg.TargetOptionsFor = func(string) []service.Option { return gnmiServerOptions(creds, u != nil, limits) }
	if f.Insecure {
		cfg.TargetOptions = append(cfg.TargetOptions, service.WithInsecure())
	} else {
		cfg.TargetOptions = append(cfg.TargetOptions, service.WithTLS(ga.tls))
	}
	sm, err := newSwitchMetrics(f.Metrics, len(cfg.Switches), stdout)
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
		fmt.Fprintf(stdout, "lhcnp switch %s: gNMI on %s, %d interfaces, speed %g, startup configuration %s\n", s.Name, s.Addr(),
			len(s.Binding.Ports().Names()), sp, startup.FileName(f.StateDir, s.Name))
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

// gnmiAuth is a gNMI server's users and TLS, loaded from the files its
// keys name: no users (nil) is anonymous read-write, no TLS (nil) insecure.
type gnmiAuth struct {
	users *auth.Users
	tls   *tls.Config
}

// loadGNMIAuth loads the users file, when given, and the TLS files, unless
// insecure. Each error starts with the key of the file at fault, prefix
// and users, tls_cert, tls_key or client_ca, for cliconf's Locate: a file
// the configuration names that is missing or does not load is a mistake
// of the configuration (exit status 2), found before the command starts
// its work, as a switch's initial configuration is.
func loadGNMIAuth(prefix, users string, insecure bool, cert, key, ca string) (gnmiAuth, error) {
	var a gnmiAuth
	var err error
	if users != "" {
		if a.users, err = auth.LoadUsers(users); err != nil {
			return a, fmt.Errorf("%susers: %w", prefix, err)
		}
	}
	if insecure {
		return a, nil
	}
	// A key file that cannot be opened at its own key; the pair's other
	// errors (a file that does not parse, a key not the certificate's)
	// at tls_cert, their message saying which.
	if _, err := os.Stat(key); err != nil {
		return a, fmt.Errorf("%stls_key: %w", prefix, err)
	}
	if a.tls, err = auth.ServerTLS(cert, key, ca); err != nil {
		k := "tls_cert"
		if errors.Is(err, auth.ErrClientCA) {
			k = "client_ca"
		}
		return a, fmt.Errorf("%s%s: %w", prefix, k, err)
	}
	return a, nil
}

// checkLimit reports whether n is a stream limit: positive (0 would be
// none, the limits' point lost) and one gRPC takes (a uint32).
func checkLimit(n int) error {
	switch {
	case n <= 0:
		return errors.New("must be positive")
	case n > math.MaxUint32:
		return fmt.Errorf("at most %d", uint32(math.MaxUint32))
	}
	return nil
}

// gnmiLimits are the limits of one gNMI server (a switch's target, the
// collector's northbound), checked by checkLimit: Subscribe streams in all
// and per user (applied with users only: without, every client is the one
// anonymous user), and RPCs per connection.
type gnmiLimits struct {
	maxStreams, maxStreamsPerUser, maxStreamsPerConnection int
}

// gnmiServerOptions returns the options of one gNMI server with the
// limits l, its credentials checked by creds (shared by the servers of a
// process: one bcrypt bound and one cache of verified passwords) and its
// streams counted by its own authenticator. Without them an authenticated
// client, or anyone where there are no users, could open streams, each
// with its queue and goroutines, without end.
func gnmiServerOptions(creds *auth.Authenticator, users bool, l gnmiLimits) []service.Option {
	perUser := 0
	if users {
		perUser = l.maxStreamsPerUser
	}
	return []service.Option{service.WithAuth(creds.WithStreamLimits(l.maxStreams, perUser)),
		service.WithMaxConcurrentStreams(uint32(l.maxStreamsPerConnection))}
}

// warnClearPasswords writes a warning (what: its start) on stderr when
// gNMI with users and without TLS listens on an address other than
// loopback (addrs): the clients' passwords cross the network in clear text.
// tlsKeys name the settings of TLS. lookup resolves host names
// (lookupHost).
func warnClearPasswords(ctx context.Context, lookup lookupFunc, stderr io.Writer, what, tlsKeys string, addrs ...string) {
	if open := notLoopback(ctx, lookup, addrs); len(open) > 0 {
		fmt.Fprintf(stderr, "%s: passwords cross the network in clear text (gNMI on %s); use TLS (%s) or a loopback address\n",
			what, strings.Join(open, ", "), tlsKeys)
	}
}

// noticeAnonymousWrites writes on stderr, when gNMI without users and
// without TLS listens (addrs), that every client is the anonymous
// read-write user: a warning (what: its start; can: what such a client
// may do; fix: the settings that close it) naming the addresses other than
// loopback, where anyone who reaches them may do it, else notice alone.
func noticeAnonymousWrites(ctx context.Context, lookup lookupFunc, stderr io.Writer, what, notice, can, fix string, addrs ...string) {
	if open := notLoopback(ctx, lookup, addrs); len(open) > 0 {
		fmt.Fprintf(stderr, "%s: anyone who reaches gNMI on %s %s as the anonymous read-write user; give %s\n",
			what, strings.Join(open, ", "), can, fix)
		return
	}
	fmt.Fprintln(stderr, notice)
}

// notLoopback returns those of addrs not on loopback only (loopbackAddr).
func notLoopback(ctx context.Context, lookup lookupFunc, addrs []string) []string {
	var open []string
	for _, a := range addrs {
		if !loopbackAddr(ctx, lookup, a) {
			open = append(open, a)
		}
	}
	return open
}

// lookupFunc resolves a host name to its addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// lookupHost is the resolver's lookupFunc.
func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// loopbackAddr reports whether the listen address host:port is on
// loopback only: a loopback IP, or a host name (localhost, or any other)
// whose every address is loopback, net.Listen listening on one of them.
// None (every interface), or a name that does not resolve, is not.
func loopbackAddr(ctx context.Context, lookup lookupFunc, addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback()
	}
	ips, err := lookup(ctx, host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// localWire is a wire of the file this process runs and the keys of its
// two ends' addresses: key the one it binds (fabric.Wire.Listen),
// peerKey the one it sends to (wires[N].a and wires[N].b).
type localWire struct {
	fabric.Wire
	key, peerKey string
}

// localWires returns the file's wires this process runs: those with one
// end among the nodes the switches in run reach without crossing a wire.
// A wire with both ends here is an ordinary link in the engine. An error
// names its key of the file loaded by cc (FILE:LINE:COL: wires[N].link).
func localWires(sc *scenario.Scenario, f *switchFile, run []fileSwitch, cc *cliconf.Config) ([]localWire, error) {
	var all []string
	for _, w := range f.Wires {
		all = append(all, w.Link)
	}
	served := make([]dataplane.Served, len(run))
	for i, s := range run {
		served[i] = dataplane.Served{Name: s.Name}
	}
	local := dataplane.Reachable(sc, served, all)
	var out []localWire
	for k, w := range f.Wires {
		i := slices.IndexFunc(sc.Links, func(l scenario.Link) bool { return l.Name == w.Link })
		if i < 0 {
			// checkScenario refuses it first in lhcnp switch; named at the
			// key as that is, for any other caller.
			return nil, cc.Locate(fmt.Errorf("wires[%d].link: scenario %s has no link %q", k, sc.Name, w.Link))
		}
		lk := sc.Links[i]
		a, b := fmt.Sprintf("wires[%d].a", k), fmt.Sprintf("wires[%d].b", k)
		switch {
		case local[lk.A] && !local[lk.B]:
			out = append(out, localWire{fabric.Wire{Link: w.Link, Listen: w.A, Peer: w.B}, a, b})
		case local[lk.B] && !local[lk.A]:
			out = append(out, localWire{fabric.Wire{Link: w.Link, Listen: w.B, Peer: w.A}, b, a})
		}
	}
	return out, nil
}

// sourceOf names the configuration in messages: its file, if any.
func sourceOf(path string) string {
	if path == "" {
		return "the configuration"
	}
	return path
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
// it reads the password (readPassword) and prints the users file line
// ("name:role:bcrypt-hash") for `lhcnp switch --users`.
func runPasswd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = flagUsage(stderr, fs, "usage: lhcnp passwd --user NAME [--role ROLE] < password",
		"prints a users-file line (name:role:bcrypt-hash); on a terminal the password is asked for twice, without echo")
	user := fs.String("user", "", "user name; required")
	role := fs.String("role", "read-only", "read-only (ro) or read-write (rw)")
	pos, err := cliconf.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *user == "" || len(pos) > 0 {
		fs.Usage()
		return usageError{"want: passwd --user NAME [--role ROLE], the password on stdin"}
	}
	r, err := auth.ParseRole(*role)
	if err != nil {
		return usageError{err.Error()}
	}
	// A name the users file cannot hold is the command line's mistake,
	// said before the password is asked for (twice, on a terminal).
	if err := auth.CheckUserName(*user); err != nil {
		return usageError{"--user: " + err.Error()}
	}
	pw, err := readPassword(ctx, stdin, stderr)
	if err != nil {
		return err
	}
	// A password bcrypt cannot hash whole (or none) is the input's
	// mistake, as a bad --user is: exit status 2, not a failure.
	if pw == "" || len(pw) > auth.MaxPasswordBytes {
		return usageError{fmt.Sprintf("password of %d bytes: want 1 to %d (bcrypt reads %d bytes, so the rest would not count)",
			len(pw), auth.MaxPasswordBytes, auth.MaxPasswordBytes)}
	}
	out, err := auth.PasswdLine(*user, r, pw)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, out)
	return err
}

// readPassword returns the password of lhcnp passwd: the first line of
// stdin, or, when stdin is a terminal, typed twice without echo after
// prompts on stderr (a typo would make a hash nobody can log in with).
func readPassword(ctx context.Context, stdin io.Reader, stderr io.Writer) (string, error) {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	fd := int(f.Fd())
	state, err := term.GetState(fd)
	if err != nil {
		return "", err
	}
	read := func(prompt string) (string, error) {
		fmt.Fprint(stderr, prompt)
		defer fmt.Fprintln(stderr) // the Enter typed was not echoed either
		type result struct {
			pw  []byte
			err error
		}
		done := make(chan result, 1)
		go func() {
			pw, err := term.ReadPassword(fd)
			done <- result{pw, err}
		}()
		// Interrupted (the signal is caught to end ctx), the read goes on
		// till the process exits: give the terminal its echo back now.
		select {
		case r := <-done:
			return string(r.pw), r.err
		case <-ctx.Done():
			term.Restore(fd, state) //nolint:errcheck // leaving anyway
			return "", ctx.Err()
		}
	}
	pw, err := read("password: ")
	if err != nil {
		return "", err
	}
	again, err := read("again: ")
	if err != nil {
		return "", err
	}
	if pw != again {
		return "", errors.New("the two passwords typed differ")
	}
	return pw, nil
}
