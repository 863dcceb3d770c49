package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/internal/hostport"
	"github.com/lhcnp/lhcnp/internal/pgdsn"
	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/lab"
	"github.com/lhcnp/lhcnp/server/fabric"
	"github.com/lhcnp/lhcnp/tuner"
)

// labFile is `lhcnp lab`'s configuration: every key is a flag (--state-dir)
// and an LHCNP_LAB_ variable (LHCNP_LAB_STATE_DIR); docs/lab.md.
type labFile struct {
	StateDir      string        `yaml:"state_dir" help:"state directory: lock, PostgreSQL cluster, collector spill, lab.log (reused by the next start)"`
	Postgres      string        `yaml:"postgres" help:"PostgreSQL DSN to use instead of a private cluster in the state directory"`
	PostgresPort  int           `yaml:"postgres_port" help:"TCP port of the private PostgreSQL on 127.0.0.1 (0: a free one, chosen once and kept in the state directory)"`
	CitusWorkers  int           `yaml:"citus_workers" help:"run the private PostgreSQL as a Citus cluster: a coordinator on postgres_port and this many workers (0: one PostgreSQL; needs scripts/deps.sh citus)"`
	HTTP          string        `yaml:"http" help:"dashboard address (host:port; port 0: a free one, chosen once and kept in the state directory)"`
	Metrics       string        `yaml:"metrics" help:"the collector's /metrics and /healthz address (host:port; port 0: a free one, chosen once and kept)"`
	Northbound    string        `yaml:"northbound" help:"the collector's northbound gNMI address: the switches' latest values by target, History, Set forwarded (host:port; port 0: a free one, chosen once and kept; empty: none)"`
	Profile       bool          `yaml:"profile" help:"serve Go's profiles of the lab process under /debug/pprof/ on the metrics address"`
	Fabric        string        `yaml:"fabric" help:"fabric file with the lab topology's switches (all run in this process)"`
	Listen        string        `yaml:"listen" help:"gNMI address of every switch, HOST:0 for free ports; another port only for a fabric of one switch (default: the fabric file's)"`
	Speed         float64       `yaml:"speed" help:"simulated seconds per wall-clock second, all switches in this process (0: the fabric file's)"`
	Horizon       time.Duration `yaml:"horizon" help:"wall-clock time after which no new window of traffic starts (0: the traffic loops for ever; with period 0 there are no windows: give 0)"`
	Period        time.Duration `yaml:"period" help:"simulated period of the repeated bursts (the §7 pattern); 0: the scenario's flows once, as written, with no web-search mix (websearch_load 0)"`
	WebSearchLoad float64       `yaml:"websearch_load" help:"web-search mix, share of each sender's link rate (0: none)"`
	Tuner         bool          `yaml:"tuner" help:"run the tuner on the Long-haul CNP switches"`
	DryRun        bool          `yaml:"dry_run" help:"the tuner decides and records without pushing"`
	TunerConfig   string        `yaml:"tuner_config" help:"the tuner's configuration file (YAML, as lhcnp tuner --config reads it: period, window, operator_hold, policy...); the lab gives it its database and switches, which the file must not name"`
	Retention     time.Duration `yaml:"retention" help:"keep this much telemetry in the database, deleting older rows every tenth of it (0: keep all)"`
	Retire        bool          `yaml:"retire_finished_flows" help:"drop each finished flow's queue pairs (counters kept in the hosts' totals), so a lab runs for days in bounded memory"`
	IgnoreStartup bool          `yaml:"ignore_startup" help:"start every switch from the fabric file's configuration, not from the one it was last committed with (state_dir/switches/NAME.json), and keep that"`

	// postgres is Postgres parsed by parseLab (parseDSN), nil for none:
	// the lab opens its pool with it (lab.Config.Postgres), so the check
	// and the use are the one parse. Unexported: not a key (cliconf).
	postgres *pgxpool.Config
	// cc, set by parseLab, names where a key's value came from
	// (cc.Locate) for labConfig's errors about the files the keys name.
	cc *cliconf.Config
}

// labEnvPrefix is the prefix of lhcnp lab's variables (LHCNP_LAB_STATE_DIR).
const labEnvPrefix = "LHCNP_LAB_"

func defaultLabFile() labFile {
	return labFile{
		StateDir:      ".lhcnp-lab",
		PostgresPort:  lab.DefaultPostgresPort,
		HTTP:          lab.DefaultHTTPAddr,
		Metrics:       lab.DefaultMetricsAddr,
		Northbound:    lab.DefaultNorthboundAddr,
		Fabric:        "examples/lab.yaml",
		Period:        4 * time.Second,
		WebSearchLoad: 0.02,
		Tuner:         true,
		Retire:        true,
		Retention:     lab.DefaultRetention,
		Speed:         lab.DefaultSpeed,
	}
}

// parseLab parses lhcnp lab's arguments: every key of labFile is a flag
// (--state-dir) and an LHCNP_LAB_ variable of environ
// (LHCNP_LAB_STATE_DIR); flags win over variables, variables over the
// --config file. The values are checked.
func parseLab(args []string, environ func() []string, stderr io.Writer) (*labFile, error) {
	cfg := defaultLabFile()
	c, err := newCLI(cliSpec{name: "lab", prefix: labEnvPrefix, configHelp: "lab configuration file (YAML; every key is also a flag)",
		usage: []string{"usage: lhcnp lab [--state-dir DIR] [--postgres DSN] [--http ADDR] [--fabric FILE] [...]",
			"       lhcnp lab status [--config FILE] [--state-dir DIR]",
			"       lhcnp lab probe (--http URL | --gnmi ADDR)"}},
		&cfg, environ, stderr)
	if err != nil {
		return nil, err
	}
	if err := c.parse(args, nil); err != nil {
		return nil, err
	}
	// A bad value is named where it came from (the file's line and
	// column, the flag, the variable), as every command names its own.
	bad := func(key string, v any, why string) (*labFile, error) {
		return nil, badValue(c.cc, key, v, why)
	}
	switch {
	case cfg.Retention != 0 && cfg.Retention < time.Minute:
		return bad("retention", cfg.Retention, "want at least 1m, or 0 to keep everything")
	case cfg.Horizon < 0:
		return bad("horizon", cfg.Horizon, "must not be negative")
	case cfg.Period < 0:
		return bad("period", cfg.Period, "must not be negative")
	case cfg.Speed < 0:
		return bad("speed", cfg.Speed, "must not be negative")
	case cfg.WebSearchLoad < 0 || cfg.WebSearchLoad > 1:
		return bad("websearch_load", cfg.WebSearchLoad, "want 0..1")
	case cfg.Period == 0 && cfg.WebSearchLoad > 0:
		// The mix is drawn window by window (lab.Loop): without windows
		// the load was dropped without a word, the lab running the
		// scenario's flows once.
		return nil, keysError(c.cc, c.config, "period 0 runs the scenario's flows once, with no windows to draw a web-search mix in: give websearch_load 0 too, or a period", "period", "websearch_load")
	case cfg.Period == 0 && cfg.Horizon > 0:
		// The horizon stops new windows (lab.Loop): without windows it
		// had no effect, taken without a word.
		return nil, keysError(c.cc, c.config, "period 0 runs the scenario's flows once, with no windows for a horizon to stop: give horizon 0, or a period", "period", "horizon")
	case cfg.CitusWorkers < 0 || cfg.CitusWorkers > 16:
		return bad("citus_workers", cfg.CitusWorkers, "want 0-16")
	case cfg.CitusWorkers > 0 && cfg.Postgres != "":
		return nil, keysError(c.cc, c.config, "citus_workers runs a private Citus cluster; with postgres the lab uses that database as it is", "citus_workers", "postgres")
	case cfg.PostgresPort < 0 || cfg.PostgresPort > 65535:
		return bad("postgres_port", cfg.PostgresPort, "want 0-65535")
	case cfg.TunerConfig != "" && !cfg.Tuner:
		return nil, keysError(c.cc, c.config, "a tuner configuration with the tuner off", "tuner_config", "tuner")
	}
	// Before anything starts: net.Listen's own error came after the
	// banner's first line, named by the part only, exit status 1 (as the
	// collector's listen addresses, collector/config).
	for _, l := range []struct{ key, addr string }{{"http", cfg.HTTP}, {"metrics", cfg.Metrics}, {"northbound", cfg.Northbound}, {"listen", cfg.Listen}} {
		if err := hostport.Check("tcp", l.addr); err != nil {
			return bad(l.key, fmt.Sprintf("%q", l.addr), err.Error())
		}
	}
	// Not with bad: the value would show the DSN's password.
	if cfg.Postgres != "" {
		if cfg.postgres, err = parseDSN("postgres", cfg.Postgres); err != nil {
			return nil, c.cc.Locate(err)
		}
	}
	cfg.cc = c.cc
	return &cfg, nil
}

// labParts names what a start of the lab starts, for its first line: a
// private PostgreSQL (or Citus cluster) only without --postgres, the tuner
// only with --tuner.
func labParts(cfg labFile) []string {
	var parts []string
	switch {
	case cfg.Postgres != "":
	case cfg.CitusWorkers > 0:
		parts = append(parts, "Citus")
	default:
		parts = append(parts, "PostgreSQL")
	}
	parts = append(parts, "switches", "collector")
	if cfg.Tuner {
		parts = append(parts, "tuner")
	}
	return append(parts, "dashboard")
}

// runLab implements `lhcnp lab`: the whole system in one process (package
// lab), or `lhcnp lab probe` (a health check for containers). It prints
// the addresses and gnmic commands to try, and stops on SIGINT/SIGTERM.
func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "probe" {
		return runLabProbe(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "status" {
		return runLabStatus(args[1:], os.Environ, stdout, stderr)
	}
	lf, err := parseLab(args, os.Environ, stderr)
	if err != nil {
		return err
	}
	// The lab's switches, collector and tuner are gRPC servers and
	// clients as lhcnp switch's, collector's and tuner's are.
	warnGRPCBinaryLog(os.Getenv, stderr, "lhcnp lab")
	cfg := *lf
	if _, err := pgserver.FindBinaries(); err != nil && cfg.Postgres == "" {
		return fmt.Errorf("%w (or give --postgres DSN)", err)
	}
	lc, err := labConfig(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	labNorthboundNotice(ctx, lookupHost, stderr, cfg.Northbound)
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(cfg.StateDir, "lab.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	lc.Logger = textLog(logFile, false)
	lc.Fabric.Log = lc.Logger.With("part", "switches")
	lc.NorthboundServer = &labNorthbound{log: lc.Logger.With("part", "collector")}

	// Said once the state directory and the addresses are the lab's: a
	// refusal of either is the one line a user sees.
	lc.Checked = func() { fmt.Fprintf(stdout, "lhcnp lab: starting (%s)...\n", strings.Join(labParts(cfg), ", ")) }
	l, err := lab.Start(ctx, lc)
	if err != nil {
		return err
	}
	printLab(stdout, l.Addresses(), cfg.StateDir, logPath, lc.Fabric.Speed)
	err = l.Run(ctx)
	fmt.Fprintln(stdout, "lhcnp lab: stopped")
	return err
}

// labConfig builds the lab from the fabric file: its switches all in this
// process (no wires), its scenario with the looping traffic. Each switch's
// startup (in the state directory) or initial configuration is loaded as
// the lab's start will load it (switchFile.checkConfigs): one refused is
// the configuration's mistake, said before the lab starts.
func labConfig(ctx context.Context, cfg labFile, stderr io.Writer) (lab.Config, error) {
	// A file a key names that cannot be read is named at the key, where
	// its value came from: os's error names the path alone.
	atKey := func(key string) func(error) error {
		return func(err error) error {
			hint := ""
			if key == "fabric" && errors.Is(err, os.ErrNotExist) {
				hint = " (run from the repository, or give the lab topology's fabric file)"
			}
			return cfg.cc.Locate(fmt.Errorf("%s: %w%s", key, err, hint))
		}
	}
	f, fcc, err := loadSwitchFile(cfg.Fabric)
	if err != nil {
		return lab.Config{}, unreadable(err, cfg.Fabric, atKey("fabric"))
	}
	// One address for every switch: a free port each (port 0), or a
	// fabric of one switch. Another port for several switches bound the
	// first and failed the second, after "starting", exit status 1,
	// blaming another program; lhcnp switch --listen refuses it so.
	if _, port, _ := net.SplitHostPort(cfg.Listen); cfg.Listen != "" && port != "0" && len(f.Switches) != 1 {
		names := make([]string, len(f.Switches))
		for i, s := range f.Switches {
			names[i] = s.Name
		}
		return lab.Config{}, badValue(cfg.cc, "listen", fmt.Sprintf("%q", cfg.Listen),
			fmt.Sprintf("one address for the %d switches of %s (%s): give port 0 (a free port each, kept), or leave each switch its listen of the file",
				len(f.Switches), cfg.Fabric, strings.Join(names, ", ")))
	}
	speed := cfg.Speed
	if speed == 0 {
		speed = f.Speed
	}
	if speed == 0 {
		speed = 1
	}
	until := time.Duration(float64(cfg.Horizon) * speed)
	loop, err := lab.NewLoop(f.Scenario, lab.Traffic{Period: cfg.Period, WebSearchLoad: cfg.WebSearchLoad, Until: until,
		RetireFinished: cfg.Retire})
	if err != nil { // the traffic's values are checked: the scenario's fault
		return lab.Config{}, fileOfKeyError(fcc, "scenario", err)
	}
	// The switches and their interfaces against the scenario, named at
	// their keys, as lhcnp switch checks them: the fabric's check at start
	// names neither.
	if err := f.checkScenario(loop.Scenario(), f.Switches, fcc); err != nil {
		return lab.Config{}, err
	}
	// Each switch's target has the fabric file's stream limits (its
	// defaults: lhcnp switch's), its own as lhcnp switch gives each:
	// without, a client of the lab could open streams without end. No
	// users: max_streams_per_user does not apply.
	creds := auth.New(nil)
	limits := gnmiLimits{f.MaxStreams, f.MaxStreamsPerUser, f.MaxStreamsPerConnection}
	fc := fabric.Config{Scenario: loop.Scenario(), Speed: speed, PublishInterval: f.PublishInterval,
		TargetDefinedInterval: f.TargetDefinedInterval, Keepalive: f.Keepalive,
		DeadAfter: f.DeadAfter, MaxLate: engine.FromDuration(f.MaxLate), IgnoreStartup: cfg.IgnoreStartup,
		TargetOptions:    []service.Option{service.WithInsecure()},
		TargetOptionsFor: func(string) []service.Option { return gnmiServerOptions(creds, false, limits) }}
	var tuned []tuner.SwitchConfig
	for _, s := range f.Switches {
		fsw := fabric.Switch{Name: s.Name, Listen: firstOf(cfg.Listen, s.Listen, "127.0.0.1:0"), Interfaces: s.Interfaces}
		if s.Config != "" {
			if fsw.Config, err = f.readConfig(s, fcc); err != nil {
				return lab.Config{}, err
			}
			fsw.ConfigName = s.Config
			// A switch with a configuration runs Long-haul CNP on the
			// interfaces whose queues it configures: the tuner's.
			ifaces, err := configuredInterfaces(fsw.Config)
			if err != nil {
				return lab.Config{}, fileOfKeyError(fcc, f.switchKey(s.Name, "config"), fmt.Errorf("%s: %w", s.Config, err))
			}
			tuned = append(tuned, tuner.SwitchConfig{Name: s.Name, Interfaces: ifaces})
		}
		fc.Switches = append(fc.Switches, fsw)
	}
	if err := labAddressesApart(cfg, f, fcc, fc.Switches); err != nil {
		return lab.Config{}, err
	}
	check := fc
	check.StartupDir = lab.StartupDir(cfg.StateDir)
	if err := f.checkConfigs(ctx, check, fcc); err != nil {
		return lab.Config{}, err
	}
	// Queues and interfaces sampled every second (the dashboard's and the
	// tuner's resolution); the flow table, larger, every five.
	second := config.Duration(time.Second)
	subs := []config.Subscription{
		{Paths: []string{"/lhcnp/interfaces"}, Mode: "sample", SampleInterval: second},
		{Paths: []string{"/lhcnp/global"}, Mode: "on_change"},
		{Paths: []string{"/lhcnp/flow-table"}, Mode: "sample", SampleInterval: 5 * second},
	}
	lc := lab.Config{StateDir: cfg.StateDir, Postgres: cfg.postgres, PostgresPort: cfg.PostgresPort, CitusWorkers: cfg.CitusWorkers, HTTPAddr: cfg.HTTP,
		MetricsAddr: cfg.Metrics, Profile: cfg.Profile,
		// The northbound has the stream limits the switches have.
		Northbound: config.Northbound{Listen: cfg.Northbound, MaxStreams: f.MaxStreams, MaxStreamsPerUser: f.MaxStreamsPerUser,
			MaxStreamsPerConnection: f.MaxStreamsPerConnection}, Retention: cfg.Retention, Fabric: fc, Traffic: loop, Subscriptions: subs}
	if lc.CollectorDB, err = collectorDB(); err != nil {
		return lab.Config{}, err
	}
	if cfg.Tuner {
		var tcc *cliconf.Config
		if lc.Tuner, tcc, err = labTuner(cfg.TunerConfig); err != nil {
			return lab.Config{}, unreadable(err, cfg.TunerConfig, atKey("tuner_config"))
		}
		lc.Tuner.DryRun = lc.Tuner.DryRun || cfg.DryRun
		lc.Tuner.Switches = tuned
		// The file's values checked as lhcnp tuner checks them; the
		// database and the switches' addresses are the lab's, set when
		// it starts.
		check := lc.Tuner
		check.DB = "lab"
		check.Switches = []tuner.SwitchConfig{{Name: "lab", Address: "lab:9339", Insecure: true}}
		if err := check.Validate(); err != nil && tcc != nil {
			return lab.Config{}, tcc.Locate(err)
		}
	}
	return lc, nil
}

// labAddressesApart refuses two of the lab's listeners on one address
// (listenersApart): the dashboard, the collector's metrics and northbound,
// the private PostgreSQL and each switch, each named at its key and where
// its value came from. The second of two failed the start as an address
// "in use by another lhcnp lab (or another program)", naming its own flag
// only, when the lab itself held it.
func labAddressesApart(cfg labFile, f *switchFile, fcc *cliconf.Config, switches []fabric.Switch) error {
	ls := []listener{{cfg.HTTP, namedKey(cfg.cc, "", "http")}, {cfg.Metrics, namedKey(cfg.cc, "", "metrics")}}
	if cfg.Northbound != "" {
		ls = append(ls, listener{cfg.Northbound, namedKey(cfg.cc, "", "northbound")})
	}
	if cfg.Postgres == "" {
		ls = append(ls, listener{net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.PostgresPort)), namedKey(cfg.cc, "", "postgres_port")})
	}
	for _, s := range switches {
		l := listener{s.Listen, namedKey(cfg.cc, "", "listen")}
		if cfg.Listen == "" {
			l.named = namedKey(fcc, cfg.Fabric, f.switchKey(s.Name, "listen"))
		}
		ls = append(ls, l)
	}
	return listenersApart("the lab's", ls)
}

// labTuner returns the lab's tuner configuration: the defaults, and over
// them the file path when one is given (tunerFile). The lab's tuner reads
// the lab's database and tunes the lab's switches, so a file that names
// either is refused rather than silently overridden; so is one naming
// metrics.listen: the lab serves its tuner's metrics on the collector's
// endpoint (--metrics), and would ignore the key.
func labTuner(path string) (tuner.Config, *cliconf.Config, error) {
	if path == "" {
		return tuner.DefaultConfig(), nil, nil
	}
	tc, cc, err := tunerFile(path)
	if err != nil {
		return tc, nil, err
	}
	if cc.InFile("db") {
		return tc, nil, cc.Locate(errors.New("db: the lab's tuner reads the lab's database; remove the key"))
	}
	if len(tc.Switches) > 0 {
		return tc, nil, cc.Locate(errors.New("switches: the lab's tuner tunes the lab's Long-haul CNP switches (the fabric file's); remove the key"))
	}
	// The lab serves its tuner's metrics on the collector's endpoint: a
	// key it would ignore is refused, as db and switches are.
	if tc.Metrics.Listen != "" {
		return tc, nil, cc.Locate(errors.New("metrics.listen: the lab serves its tuner's metrics on its collector's /metrics (--metrics); remove the key"))
	}
	return tc, cc, nil
}

// tunerFile reads a tuner configuration file (lhcnp tuner --config's
// format) over the defaults, strictly: an unknown key is an error naming
// its line. No flag or variable is read; the values are not validated.
func tunerFile(path string) (tuner.Config, *cliconf.Config, error) {
	tc := tuner.DefaultConfig()
	fs := flag.NewFlagSet("tuner-config", flag.ContinueOnError)
	cc, err := cliconf.Register(fs, &tc)
	if err != nil {
		return tc, nil, err
	}
	if err := fs.Parse(nil); err != nil {
		return tc, nil, err
	}
	if err := cc.Load(path); err != nil {
		return tc, nil, err
	}
	return tc, cc, nil
}

// configuredInterfaces returns the interfaces whose queues a switch's
// initial configuration (RFC 7951 JSON) sets.
func configuredInterfaces(cfgJSON []byte) ([]string, error) {
	var doc struct {
		Root struct {
			Interfaces struct {
				Interface []struct {
					Name   string `json:"name"`
					Queues *struct {
						Queue []json.RawMessage `json:"queue"`
					} `json:"queues"`
				} `json:"interface"`
			} `json:"interfaces"`
		} `json:"lhcnp:lhcnp"`
	}
	if err := json.Unmarshal(cfgJSON, &doc); err != nil {
		return nil, err
	}
	var out []string
	for _, i := range doc.Root.Interfaces.Interface {
		if i.Queues != nil && len(i.Queues.Queue) > 0 {
			out = append(out, i.Name)
		}
	}
	return out, nil
}

// labGnmicCommands are the commands printed to try: each works as printed
// against a running lab (TestLabStarts runs them).
func labGnmicCommands(a lab.Addresses) []string {
	n1 := a.Switches["n1"]
	n2 := a.Switches["n2"]
	q := "/lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]"
	cmds := []string{
		fmt.Sprintf("gnmic -a %s --insecure capabilities", n1),
		fmt.Sprintf("gnmic -a %s --insecure get --type state -e json_ietf --path '%s/state/effective-kmax' --path '%s/state/queue-depth'", n1, q, q),
		fmt.Sprintf("gnmic -a %s --insecure subscribe --mode stream --stream-mode sample --sample-interval 1s -e json_ietf --path '%s/state/queue-depth'", n1, q),
		fmt.Sprintf("gnmic -a %s --insecure set -e json_ietf --update-path '%s/config/alpha' --update-value 0.25", n1, q),
		fmt.Sprintf("gnmic -a %s --insecure get --type state -e json_ietf --path /lhcnp/global/state/engine-lag --path '/lhcnp/interfaces/interface[name=to-dest]/queues/queue[id=0]/state/counters'", n2),
	}
	if a.Northbound != "" {
		// History through the collector: n1's queue depth over the last
		// minute, from the database.
		cmds = append(cmds, fmt.Sprintf(`gnmic -a %s --insecure subscribe --target n1 -e json_ietf --history-start "$(date -u -d '1 minute ago' +%%Y-%%m-%%dT%%H:%%M:%%SZ)" --history-end "$(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ)" --path '%s/state/queue-depth'`, a.Northbound, q))
	}
	return cmds
}

// printLab prints the banner of a started lab: its addresses, its files
// under the state directory as the user named it (stateDir: a relative
// --state-dir stays relative, as logPath is), the commands to try.
func printLab(w io.Writer, a lab.Addresses, stateDir, logPath string, speed float64) {
	fmt.Fprintln(w)
	printAddresses(w, a, stateDir)
	fmt.Fprintf(w, "  logs        %s\n  speed       %g simulated seconds per second\n", logPath, speed)
	fmt.Fprintf(w, "  startup     %s (each switch's last committed configuration; --ignore-startup starts from the fabric file's)\n",
		filepath.Join(inStateDir(a, stateDir, a.StartupDir), "NAME.json"))
	fmt.Fprintln(w, "\nTry (gnmic: https://gnmic.openconfig.net, or ../shared/tools/gnmic):")
	for _, c := range labGnmicCommands(a) {
		fmt.Fprintln(w, "  "+c)
	}
	fmt.Fprintln(w, "\nCtrl-C stops the lab; the next start reuses "+stateDir+" and these addresses (lhcnp lab status prints them).")
	fmt.Fprintln(w, strings.Repeat("-", 60))
}

// inStateDir names path, a file of the lab (absolute, as Addresses has
// it), under the state directory as the user named it, stateDir; a path
// outside the state directory is named as it is.
func inStateDir(a lab.Addresses, stateDir, path string) string {
	rel, err := filepath.Rel(a.StateDir, path)
	if err != nil || a.StateDir == "" || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return filepath.Join(stateDir, rel)
}

// printAddresses prints where the lab's parts answer, a line each; the
// private cluster's directory under stateDir, the state directory as the
// user named it (inStateDir).
func printAddresses(w io.Writer, a lab.Addresses, stateDir string) {
	fmt.Fprintf(w, "  dashboard   %s\n", a.Dashboard)
	for _, name := range a.Names {
		fmt.Fprintf(w, "  switch %-4s gNMI %s (insecure)\n", name, a.Switches[name])
	}
	pg := pgdsn.Redact(a.PostgresDSN) // --postgres may hold a password
	switch {
	case a.PrivatePG && a.CitusWorkers > 0:
		pg += fmt.Sprintf("   (private Citus cluster, coordinator and %d workers, in %s)", a.CitusWorkers, filepath.Join(stateDir, "citus"))
	case a.PrivatePG:
		pg += "   (private cluster in " + filepath.Join(stateDir, "postgres") + ")"
	}
	fmt.Fprintf(w, "  postgresql  %s\n", pg)
	if a.Metrics != "" {
		fmt.Fprintf(w, "  collector   %s\n", a.Metrics)
	}
	if a.TunerMetrics != "" {
		fmt.Fprintf(w, "  tuner       %s (lhcnp_tuner_, on the collector's endpoint)\n", a.TunerMetrics)
	}
	if a.Northbound != "" {
		fmt.Fprintf(w, "  northbound  gNMI %s (insecure; History)\n", a.Northbound)
	}
}

// runLabStatus implements `lhcnp lab status`: the addresses of the lab of a
// state directory (those of its last start, which the next start keeps)
// and whether it runs. The directory is lhcnp lab's state_dir, read as
// lhcnp lab reads it: its --config file < the LHCNP_LAB_ variables of
// environ < --state-dir, so the command line, the file or the variables a
// lab was started with find it; an unknown key or variable is refused as
// lhcnp lab refuses it.
func runLabStatus(args []string, environ func() []string, stdout, stderr io.Writer) error {
	cfg := defaultLabFile()
	c, err := newCLI(cliSpec{name: "lab status", prefix: labEnvPrefix, configHelp: "lhcnp lab's configuration file (YAML): its state_dir names the lab",
		usage: []string{"usage: lhcnp lab status [--config FILE] [--state-dir DIR] [--KEY VALUE ...]",
			"The lab is the one of state_dir, from lhcnp lab's flags, LHCNP_LAB_ variables and --config file as lhcnp lab reads them;",
			"its other keys are taken and not used."}},
		&cfg, environ, stderr)
	if err != nil {
		return err
	}
	if err := c.parse(args, nil); err != nil {
		return err
	}
	stateDir := cfg.StateDir
	a, pid, running, err := lab.ReadAddresses(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: no lab has started there (no %s)", stateDir, lab.AddressesFile)
	}
	if err != nil {
		return err
	}
	if running {
		fmt.Fprintf(stdout, "lab on %s: running (pid %d)\n", stateDir, pid)
	} else {
		fmt.Fprintf(stdout, "lab on %s: stopped; its next start listens on the same addresses\n", stateDir)
	}
	printAddresses(stdout, a, stateDir)
	return nil
}
