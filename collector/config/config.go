// Package config is the collector's configuration: the keys of its YAML file
// (examples/collector.yaml), their defaults, their checks, and the targets
// (switches) with their subscriptions, whether they come from the file or
// from the targets table.
//
// It holds data and checks only: no I/O besides reading TLS files named by
// a target, no database, no gRPC. It must not depend on the rest of
// collector/.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/hostport"
	"github.com/openconfig/gnmi/proto/gnmi"
	"go.yaml.in/yaml/v3"
)

// File is the collector configuration. Scalar keys are also flags and
// LHCNP_COLLECTOR_ variables (internal/cliconf).
type File struct {
	// ID names this collector in leases, the ledger and the collectors
	// table; empty: the host name and a hash of state_dir (DefaultID).
	ID string `yaml:"id" help:"collector id in leases, the ledger and application_name (empty: the host name and a hash of state_dir)"`
	DB DB     `yaml:"db"`
	// StateDir holds the spill segments.
	StateDir string  `yaml:"state_dir" help:"directory of the spill segments and dead_letters.jsonl"`
	Metrics  Metrics `yaml:"metrics"`
	Writer   Writer  `yaml:"writer"`
	Leases   Leases  `yaml:"leases"`
	// Northbound serves the fleet over gNMI (collector/northbound).
	Northbound Northbound `yaml:"northbound"`
	// Targets are the switches of the file; more come from the targets
	// table when db.targets_table is on.
	Targets []Target `yaml:"targets"`
}

// DB is the PostgreSQL side.
type DB struct {
	DSN string `yaml:"dsn" help:"PostgreSQL connection string (postgres://... or key=value)"`
	// Migrate applies migrations/ at start, under an advisory lock.
	Migrate bool `yaml:"migrate" help:"apply the schema migrations at start"`
	// TargetsTable reads targets from the targets table (LISTEN lhcnp_targets
	// and every TargetsReread).
	TargetsTable  bool          `yaml:"targets_table" help:"also take targets from the targets table"`
	TargetsReread time.Duration `yaml:"targets_reread" help:"re-read the targets table this often (safety net for LISTEN)"`
	// Retention, when set, is how long samples, events and ledger rows are
	// kept, set in the database at each maintenance pass ("0": for ever).
	// Unset (""), the collector leaves the database's own retention (what
	// lhcnp migrate up --retention or lhcnp_set_retention set; 30 days on
	// a new schema) and runs its passes with it: a collector started with
	// the defaults must not cut what a DBA chose. A string, as migrate's
	// key, so that unset and 0 differ in the file, a variable and a flag.
	// RetentionKeep parses it.
	Retention string `yaml:"retention" help:"keep samples, events and ledger rows this long, set in the database at each maintenance pass (a Go duration such as 168h, or 0 for ever); default: the database's own, unchanged (lhcnp migrate up --retention; 30 days on a new schema)"`
	// MaintainInterval runs partition maintenance (create ahead, drop past
	// retention) this often.
	MaintainInterval time.Duration `yaml:"maintain_interval" help:"partition maintenance period"`
}

// RetentionKeep parses db.retention: set is false when it is unset (the
// database's own retention stands); keep 0 keeps everything.
func (d DB) RetentionKeep() (keep time.Duration, set bool, err error) {
	if d.Retention == "" {
		return 0, false, nil
	}
	keep, err = time.ParseDuration(d.Retention)
	if err != nil || keep < 0 || (keep > 0 && keep < time.Second) {
		return 0, false, fmt.Errorf("db.retention: %q: want a duration of 1s or more such as 168h, or 0 for ever (unset: the database's own)", d.Retention)
	}
	return keep, true, nil
}

// Metrics is the HTTP endpoint of /metrics and /healthz.
type Metrics struct {
	Listen string `yaml:"listen" help:"address of /metrics and /healthz (empty: off)"`
	// Profile adds Go's profiles (net/http/pprof) under /debug/pprof/ on
	// the same address: off by default, as they show the process's
	// insides to whoever reaches the port.
	Profile bool `yaml:"profile" help:"serve Go's profiles under /debug/pprof/ beside /metrics"`
}

// Writer is the write path: queue, spill, batches.
type Writer struct {
	BatchRows     int           `yaml:"batch_rows" help:"rows per batch (COPY)"`
	BatchInterval time.Duration `yaml:"batch_interval" help:"longest wait before a partial batch is written"`
	// QueueRows bounds the rows held in memory; past it batches go to the
	// spill.
	QueueRows int `yaml:"queue_rows" help:"rows held in memory before batches spill to disk"`
	// SpillBytes bounds the spill; past it batches are dropped (counted).
	SpillBytes int64 `yaml:"spill_bytes" help:"largest spill on disk, bytes; past it batches are dropped and counted"`
	// SegmentBytes is the size at which a spill segment is closed.
	SegmentBytes int64 `yaml:"segment_bytes" help:"spill segment size, bytes"`
	// RefusedFileWarnBytes: past this size of state_dir/dead_letters.jsonl
	// (never rotated) the collector logs a warning, once per crossing; 0
	// never warns.
	RefusedFileWarnBytes int64 `yaml:"refused_file_warn_bytes" help:"size of state_dir/dead_letters.jsonl, bytes, past which a warning is logged (0: never)"`
	// Fsync: "batch" syncs each spilled batch before it is acknowledged,
	// "none" leaves it to the kernel.
	Fsync string `yaml:"fsync" help:"spill durability: batch (fsync each batch) or none"`
	// RetryMax is the longest back-off between failed writes (and failed
	// reads of the latest table, and LISTEN reconnections), jitter included.
	RetryMax time.Duration `yaml:"retry_max" help:"longest back-off between failed writes, jitter included"`
}

// Leases is scale-out: targets shared by several collectors.
type Leases struct {
	Enabled bool          `yaml:"enabled" help:"share targets with other collectors through leases"`
	TTL     time.Duration `yaml:"ttl" help:"lease and membership lifetime without renewal"`
	Renew   time.Duration `yaml:"renew" help:"lease renewal and heartbeat period"`
}

// Northbound is the collector's own gNMI endpoint: the switches' latest
// values, History from the database, Set forwarded. The transport options
// are a switch's (--listen, --insecure or --tls-cert/--tls-key, --client-ca,
// --users).
type Northbound struct {
	Listen   string `yaml:"listen" help:"northbound gNMI address (empty: off)"`
	Insecure bool   `yaml:"insecure" help:"northbound without TLS (labs)"`
	TLSCert  string `yaml:"tls_cert" help:"northbound TLS certificate (PEM)"`
	TLSKey   string `yaml:"tls_key" help:"northbound TLS key (PEM)"`
	ClientCA string `yaml:"client_ca" help:"CA of northbound client certificates (mTLS)"`
	Users    string `yaml:"users" help:"northbound users file (name:role:bcrypt-hash lines, see lhcnp passwd); none: anonymous read-write, so TLS needs users or client_ca"`
	// The limits, a switch's keys (max_streams, ...): one more Subscribe
	// stream, in all or of one user (with users), is RESOURCE_EXHAUSTED;
	// a connection's RPC over its limit waits in the client.
	MaxStreams              int `yaml:"max_streams" help:"northbound Subscribe streams open at once, at most"`
	MaxStreamsPerUser       int `yaml:"max_streams_per_user" help:"northbound Subscribe streams one user may have open at once, at most (with northbound.users)"`
	MaxStreamsPerConnection int `yaml:"max_streams_per_connection" help:"RPCs one northbound connection may have open at once, at most (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS)"`
}

// Defaults returns the defaults of every key.
func Defaults() File {
	return File{
		DB: DB{Migrate: true, TargetsTable: true, TargetsReread: 30 * time.Second,
			MaintainInterval: time.Hour},
		StateDir: "lhcnp-collector",
		Writer: Writer{BatchRows: 5000, BatchInterval: 200 * time.Millisecond, QueueRows: 200_000,
			SpillBytes: 1 << 30, SegmentBytes: 16 << 20, RefusedFileWarnBytes: 64 << 20, Fsync: "batch", RetryMax: 10 * time.Second},
		Leases: Leases{TTL: 15 * time.Second, Renew: 5 * time.Second},
		Northbound: Northbound{MaxStreams: auth.DefaultMaxStreams, MaxStreamsPerUser: auth.DefaultMaxStreamsPerUser,
			MaxStreamsPerConnection: service.DefaultMaxConcurrentStreams},
	}
}

// Target is one switch.
type Target struct {
	Name       string `yaml:"name" json:"name"`
	Address    string `yaml:"address" json:"address"`
	Insecure   bool   `yaml:"insecure" json:"insecure"`
	SkipVerify bool   `yaml:"skip_verify" json:"skip_verify"`
	CAFile     string `yaml:"ca_file" json:"ca_file"`
	CertFile   string `yaml:"cert_file" json:"cert_file"`
	KeyFile    string `yaml:"key_file" json:"key_file"`
	Username   string `yaml:"username" json:"username"`
	Password   string `yaml:"password" json:"password"`
	// Subscriptions default to DefaultSubscriptions.
	Subscriptions []Subscription `yaml:"subscriptions" json:"subscriptions"`
	// Enabled is false for a row of the targets table switched off.
	Enabled *bool `yaml:"enabled" json:"enabled"`
}

// Subscription is one subscription of a target's SubscriptionList; all of a
// target's subscriptions go in one Subscribe stream.
type Subscription struct {
	Paths []string `yaml:"paths" json:"paths"`
	// Mode: sample, on_change or target_defined (STREAM).
	Mode              string   `yaml:"mode" json:"mode"`
	SampleInterval    Duration `yaml:"sample_interval" json:"sample_interval"`
	HeartbeatInterval Duration `yaml:"heartbeat_interval" json:"heartbeat_interval"`
	SuppressRedundant bool     `yaml:"suppress_redundant" json:"suppress_redundant"`
}

// Duration is a time.Duration written "1s" in YAML and JSON (the targets
// table's subscriptions column).
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler (YAML, JSON, flags).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalYAML accepts "1s" (and 0).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "0" {
		*d = 0
		return nil
	}
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// DefaultSubscriptions is what a target without subscriptions gets: the
// whole lhcnp tree, TARGET_DEFINED (counters and gauges sampled, config
// and discrete state on change, at the switch's own sample interval).
func DefaultSubscriptions() []Subscription {
	return []Subscription{{Paths: []string{"/lhcnp"}, Mode: "target_defined"}}
}

var modes = map[string]gnmi.SubscriptionMode{
	"sample":         gnmi.SubscriptionMode_SAMPLE,
	"on_change":      gnmi.SubscriptionMode_ON_CHANGE,
	"target_defined": gnmi.SubscriptionMode_TARGET_DEFINED,
}

// IsEnabled reports whether the target is to be collected.
func (t *Target) IsEnabled() bool { return t.Enabled == nil || *t.Enabled }

// Check reports the first problem of a target, naming the key.
func (t *Target) Check() error {
	at := "targets[" + t.Name + "]"
	if t.Name == "" {
		return errors.New("targets: a target without name")
	}
	if t.Address == "" {
		return fmt.Errorf("%s.address: missing", at)
	}
	if err := hostport.Check("tcp", t.Address); err != nil {
		return fmt.Errorf("%s.address: %q: %w", at, t.Address, err)
	}
	if t.Insecure && (t.CAFile != "" || t.CertFile != "" || t.SkipVerify) {
		return fmt.Errorf("%s.insecure: set together with TLS keys (ca_file, cert_file, skip_verify)", at)
	}
	// skip_verify would verify nothing, the CA read and ignored: refused
	// rather than one of them chosen for the operator.
	if t.SkipVerify && t.CAFile != "" {
		return fmt.Errorf("%s.skip_verify: set together with ca_file: the certificate would not be verified, the CA ignored; give one of them", at)
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return fmt.Errorf("%s.cert_file: needs key_file (and the other way round)", at)
	}
	for _, f := range []struct{ key, path string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return fmt.Errorf("%s.%s: %w", at, f.key, err)
		}
	}
	for i, s := range t.Subscriptions {
		sat := fmt.Sprintf("%s.subscriptions[%d]", at, i)
		if len(s.Paths) == 0 {
			return fmt.Errorf("%s.paths: missing", sat)
		}
		if _, ok := modes[s.Mode]; !ok && s.Mode != "" {
			return fmt.Errorf("%s.mode: %q is not sample, on_change or target_defined", sat, s.Mode)
		}
		if s.SampleInterval < 0 || s.HeartbeatInterval < 0 {
			return fmt.Errorf("%s: negative interval", sat)
		}
		if s.SampleInterval != 0 && s.Mode != "sample" {
			return fmt.Errorf("%s.sample_interval: only for mode sample (gNMI 3.5.1.5.2)", sat)
		}
		for _, p := range s.Paths {
			if !strings.HasPrefix(p, "/") {
				return fmt.Errorf("%s.paths: %q does not start with /", sat, p)
			}
			// Parsed here, where a row or file is refused, not at the
			// first Subscribe after it was taken.
			if _, err := store.ParsePath(p); err != nil {
				return fmt.Errorf("%s.paths: %w", sat, err)
			}
		}
	}
	return nil
}

// Check reports the first problem of the file, naming the key.
func (f *File) Check() error {
	switch {
	case f.DB.DSN == "":
		return errors.New("db.dsn: missing (PostgreSQL connection string)")
	case f.StateDir == "":
		return errors.New("state_dir: missing")
	case f.Writer.BatchRows <= 0:
		return fmt.Errorf("writer.batch_rows: %d: must be positive", f.Writer.BatchRows)
	case f.Writer.BatchInterval <= 0:
		return fmt.Errorf("writer.batch_interval: %v: must be positive", f.Writer.BatchInterval)
	case f.Writer.QueueRows < f.Writer.BatchRows:
		return fmt.Errorf("writer.queue_rows: %d: must hold at least one batch (writer.batch_rows %d)", f.Writer.QueueRows, f.Writer.BatchRows)
	case f.Writer.SpillBytes < 0:
		return fmt.Errorf("writer.spill_bytes: %d: negative", f.Writer.SpillBytes)
	case f.Writer.RefusedFileWarnBytes < 0:
		return fmt.Errorf("writer.refused_file_warn_bytes: %d: negative", f.Writer.RefusedFileWarnBytes)
	case f.Writer.SegmentBytes <= 0:
		return fmt.Errorf("writer.segment_bytes: %d: must be positive", f.Writer.SegmentBytes)
	case f.Writer.Fsync != "batch" && f.Writer.Fsync != "none":
		return fmt.Errorf("writer.fsync: %q is not batch or none", f.Writer.Fsync)
	case f.Leases.Enabled && (f.Leases.Renew <= 0 || f.Leases.TTL <= f.Leases.Renew):
		return errors.New("leases.ttl: must exceed leases.renew (both positive)")
	case f.DB.MaintainInterval <= 0:
		// The pass's ticker: time.NewTicker panics on it.
		return fmt.Errorf("db.maintain_interval: %v: must be positive", f.DB.MaintainInterval)
	case f.DB.TargetsTable && f.DB.TargetsReread <= 0:
		return fmt.Errorf("db.targets_reread: %v: must be positive", f.DB.TargetsReread)
	case f.Northbound.Listen != "" && f.Northbound.Insecure == (f.Northbound.TLSCert != ""):
		return errors.New("northbound.insecure: exactly one of northbound.insecure and northbound.tls_cert (with northbound.tls_key)")
	case f.Northbound.Listen != "" && !f.Northbound.Insecure && f.Northbound.Users == "" && f.Northbound.ClientCA == "":
		// TLS that lets anyone in as the read-write user would look
		// secure and be open: an operator who chose TLS wants clients
		// identified, by a password or a certificate.
		return errors.New("northbound.users: TLS without northbound.users or northbound.client_ca would let every client Set as the anonymous read-write user; give a users file (lhcnp passwd), a client CA, or both")
	}
	if _, _, err := f.DB.RetentionKeep(); err != nil {
		return err
	}
	// Before the database is reached: net.Listen's own error came once
	// the collector had connected and migrated, named by the key only.
	for _, l := range []struct{ key, addr string }{{"metrics.listen", f.Metrics.Listen}, {"northbound.listen", f.Northbound.Listen}} {
		if err := hostport.Check("tcp", l.addr); err != nil {
			return fmt.Errorf("%s: %q: %w", l.key, l.addr, err)
		}
	}
	for _, l := range []struct {
		key string
		n   int
	}{{"max_streams", f.Northbound.MaxStreams}, {"max_streams_per_user", f.Northbound.MaxStreamsPerUser},
		{"max_streams_per_connection", f.Northbound.MaxStreamsPerConnection}} {
		// 0 would be no limit, the limits' point lost; gRPC takes a uint32.
		if l.n <= 0 {
			return fmt.Errorf("northbound.%s: %d: must be positive", l.key, l.n)
		}
		if l.n > math.MaxUint32 {
			return fmt.Errorf("northbound.%s: %d: at most %d", l.key, l.n, uint32(math.MaxUint32))
		}
	}
	seen := map[string]bool{}
	for i := range f.Targets {
		t := &f.Targets[i]
		if err := t.Check(); err != nil {
			return err
		}
		if seen[t.Name] {
			return fmt.Errorf("targets[%q]: listed twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// SubscribeRequest is the target's Subscribe request: one STREAM
// subscription list with all its subscriptions, encoding PROTO (scalars
// arrive typed, with no JSON to parse; collector/rows still decodes JSON
// values from targets that send them anyway).
func (t *Target) SubscribeRequest() (*gnmi.SubscribeRequest, error) {
	subs := t.Subscriptions
	if len(subs) == 0 {
		subs = DefaultSubscriptions()
	}
	sl := &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_PROTO}
	for _, s := range subs {
		mode := gnmi.SubscriptionMode_TARGET_DEFINED
		if s.Mode != "" {
			mode = modes[s.Mode]
		}
		for _, p := range s.Paths {
			gp, err := store.ParsePath(p)
			if err != nil {
				return nil, fmt.Errorf("targets[%s].subscriptions: %w", t.Name, err)
			}
			sl.Subscription = append(sl.Subscription, &gnmi.Subscription{
				Path:              gp,
				Mode:              mode,
				SampleInterval:    uint64(time.Duration(s.SampleInterval).Nanoseconds()),
				HeartbeatInterval: uint64(time.Duration(s.HeartbeatInterval).Nanoseconds()),
				SuppressRedundant: s.SuppressRedundant,
			})
		}
	}
	return &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: sl}}, nil
}

// ParseSubscriptions decodes the subscriptions column of the targets table
// (JSON, the YAML list's shape). Unknown keys are errors.
func ParseSubscriptions(data []byte) ([]Subscription, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var out []Subscription
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("subscriptions: %w", err)
	}
	return out, nil
}
