package tuner

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lhcnp/lhcnp/internal/hostport"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// Config is the tuner's configuration (examples/tuner.yaml documents every
// key).
type Config struct {
	// DB is the PostgreSQL connection string of the collector's database.
	DB string `yaml:"db" help:"the collector's PostgreSQL database, a connection string (postgres://... or key=value)"`
	// Period is how often the tuner decides; Window how much telemetry
	// each decision reads (ending now).
	Period time.Duration `yaml:"period" help:"how often the tuner decides"`
	Window time.Duration `yaml:"window" help:"how much telemetry, ending now, each decision reads (at least policy.min_samples of the collector's samples)"`
	// DryRun decides and records without pushing.
	DryRun bool `yaml:"dry_run" help:"decide and record (outcome dry-run) without pushing"`
	// RollbackDuration is the Commit Confirmed rollback duration: a change
	// not confirmed within it is rolled back by the switch (the tuner
	// cancels its commits itself by JudgeBound; the switch's rollback is
	// for a tuner that died). JudgeWindow is the telemetry after a change
	// the tuner judges it on; it must end before the rollback does.
	RollbackDuration time.Duration `yaml:"rollback_duration" help:"Commit Confirmed rollback duration: the switch rolls back a change not confirmed within it (for a tuner that died); must exceed judge_window + 2 periods"`
	JudgeWindow      time.Duration `yaml:"judge_window" help:"telemetry after a push on which the tuner judges the change: confirmed when applied and the objective not worse, cancelled otherwise"`
	// SwitchTimeout bounds the time one switch may take in a period (reads
	// and gNMI calls), so a hanging switch does not stall the others.
	SwitchTimeout time.Duration `yaml:"switch_timeout" help:"longest one switch may take in a period (reads and gNMI calls), so a hanging switch does not stall the others"`
	// OperatorHold is how long the tuner leaves a queue alone after a
	// change to a leaf it tunes that it did not make (another client's
	// Set): the operator wins (docs/tuner.md, "The operator").
	OperatorHold time.Duration `yaml:"operator_hold" help:"how long a queue is left alone after a change the tuner did not make to a leaf it tunes (the operator wins)"`
	// ClockSkew is how far a switch's clock may be ahead of the database's:
	// the collector's ingest ledger, which tells when a switch reported, is
	// read by commit time from the window's start minus this on, so a
	// switch further ahead looks as if it did not report (gaps).
	ClockSkew time.Duration `yaml:"clock_skew" help:"how far a switch's clock may be ahead of the database's; a switch further ahead looks as if it did not report (gap)"`
	// StateDir keeps, from a tuner that stops to the one started next,
	// the audit trail's writes the database did not take before the stop
	// (StateFile): an operator's row and its hold, a hold's row, an
	// outcome, the delete of a row whose decision was not pushed. ""
	// keeps none: they are lost with the process.
	StateDir string `yaml:"state_dir" help:"directory keeping the audit trail's writes the database did not take before a stop, for the next start (empty: none, lost with the process)"`
	// Metrics is the HTTP endpoint of /metrics and /healthz (the command
	// serves it; docs/tuner.md, "Metrics and health").
	Metrics MetricsConfig `yaml:"metrics"`
	// Switches are the switches tuned: Name is the collector's target name
	// (the `target` column of the views).
	Switches []SwitchConfig `yaml:"switches"`
	Policy   policy.Config  `yaml:"policy"`
}

// MetricsConfig is the tuner's /metrics and /healthz endpoint.
type MetricsConfig struct {
	Listen string `yaml:"listen" help:"address of /metrics and /healthz (host:port; empty: off)"`
}

// SwitchConfig is how the tuner reaches one switch over gNMI.
type SwitchConfig struct {
	Name       string `yaml:"name"`
	Address    string `yaml:"address"`
	Insecure   bool   `yaml:"insecure"`
	SkipVerify bool   `yaml:"skip_verify"`
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
	Username   string `yaml:"username"`
	Password   string `yaml:"password"`
	// Interfaces, when not empty, restricts the tuner to these interfaces.
	Interfaces []string `yaml:"interfaces"`
}

// DefaultClockSkew is the default Config.ClockSkew: switches synchronised
// by NTP or PTP are within milliseconds of the database.
const DefaultClockSkew = time.Minute

// DefaultConfig is the configuration examples/tuner.yaml starts from.
func DefaultConfig() Config {
	return Config{
		Period:           5 * time.Second,
		Window:           10 * time.Second,
		RollbackDuration: 30 * time.Second,
		JudgeWindow:      10 * time.Second,
		SwitchTimeout:    10 * time.Second,
		OperatorHold:     15 * time.Minute,
		ClockSkew:        DefaultClockSkew,
		StateDir:         "lhcnp-tuner",
		Policy:           policy.DefaultConfig(),
	}
}

// Validate checks the configuration, naming the key at fault.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.DB == "" {
		bad("db", "missing (the collector's PostgreSQL, e.g. postgres://user@host/lhcnp)")
	}
	if c.Period <= 0 {
		bad("period", "%v: must be positive", c.Period)
	}
	if c.Window <= 0 {
		bad("window", "%v: must be positive", c.Window)
	}
	if c.JudgeWindow <= 0 {
		bad("judge_window", "%v: must be positive", c.JudgeWindow)
	}
	if c.RollbackDuration <= c.JudgeBound() {
		bad("rollback_duration", "%v: must exceed judge_window + 2 periods (%v): the tuner may need that long to judge a change",
			c.RollbackDuration, c.JudgeBound())
	}
	if c.OperatorHold <= 0 {
		bad("operator_hold", "%v: must be positive", c.OperatorHold)
	}
	if c.ClockSkew <= 0 {
		bad("clock_skew", "%v: must be positive (how far a switch's clock may be ahead of the database's)", c.ClockSkew)
	}
	if c.SwitchTimeout <= 0 {
		bad("switch_timeout", "%v: must be positive", c.SwitchTimeout)
	}
	// Before the database is reached, as the collector's metrics.listen.
	if err := hostport.Check("tcp", c.Metrics.Listen); err != nil {
		bad("metrics.listen", "%q: %v", c.Metrics.Listen, err)
	}
	if len(c.Switches) == 0 {
		bad("switches", "none: list the switches to tune")
	}
	seen := map[string]bool{}
	for i, s := range c.Switches {
		key := fmt.Sprintf("switches[%d]", i)
		switch {
		case s.Name == "":
			bad(key+".name", "missing (the collector's target name)")
		case seen[s.Name]:
			bad(key+".name", "%q listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.Address == "" {
			bad(key+".address", "missing (host:port of the switch's gNMI)")
		} else if err := hostport.Check("tcp", s.Address); err != nil {
			bad(key+".address", "%q: %v", s.Address, err)
		}
		// Plain gRPC reads none of the TLS keys: refused rather than
		// the keys silently ignored, as the collector's targets.
		if s.Insecure && (s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" || s.ServerName != "" || s.SkipVerify) {
			bad(key+".insecure", "set together with TLS keys (ca_file, cert_file, key_file, server_name, skip_verify)")
		}
		if !s.Insecure && s.CAFile == "" && !s.SkipVerify {
			bad(key+".ca_file", "missing: give ca_file, skip_verify or insecure")
		}
		// skip_verify would verify nothing, the CA read and ignored:
		// refused rather than one of them chosen for the operator (as the
		// collector's targets).
		if s.SkipVerify && s.CAFile != "" {
			bad(key+".skip_verify", "set together with ca_file: the certificate would not be verified, the CA ignored; give one of them")
		}
		// A client certificate is both: cert_file alone failed at the
		// switch's first connection (every push failing then), key_file
		// alone was ignored without a word. The collector's targets
		// refuse either the same way.
		if (s.CertFile == "") != (s.KeyFile == "") {
			bad(key+".cert_file", "needs key_file (and the other way round)")
		}
		// The files are read at the switch's first connection, a failure
		// of every push then: one missing is the configuration's mistake,
		// said at the start (as the collector's targets' are).
		for _, f := range []struct{ key, path string }{{"ca_file", s.CAFile}, {"cert_file", s.CertFile}, {"key_file", s.KeyFile}} {
			if f.path == "" {
				continue
			}
			if _, err := os.Stat(f.path); err != nil {
				bad(key+"."+f.key, "%v", err)
			}
		}
	}
	if err := c.Policy.Validate(); err != nil {
		errs = append(errs, prefixErr("policy.", err))
	}
	return errors.Join(errs...)
}

// JudgeBound is the longest the tuner keeps a commit pending: the judge
// window after the push, and at most two periods more for the telemetry to
// show the change applied with a complete window (the collector's samples
// come well within a period). A commit not judged by then is cancelled, and
// one judged worse is cancelled at once: an operator's Set is never refused
// for longer because of the tuner.
func (c Config) JudgeBound() time.Duration { return c.JudgeWindow + 2*c.Period }

// prefixErr prefixes every joined error's key.
func prefixErr(prefix string, err error) error {
	var out []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, fmt.Errorf("%s%w", prefix, e))
		}
		return errors.Join(out...)
	}
	return fmt.Errorf("%s%w", prefix, err)
}
