// Package pgserver runs a private PostgreSQL cluster from the server binaries
// installed on the machine: initdb into a data directory (or reuse one), a
// postmaster listening on 127.0.0.1 only (and on a unix socket in the data
// directory when the path is short enough), trust authentication, and a clean
// fast shutdown. `lhcnp lab` keeps its cluster in its state directory; tests
// use a temporary one through internal/pgtest.
//
// PostgreSQL refuses to run as root, so when this process is root the cluster
// runs as the unprivileged `postgres` system user (Debian's package creates
// it) in a directory that user owns.
//
// The package depends on the standard library and pgx only; it knows nothing
// of lhcnp's schema.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotInstalled is returned (wrapped) by FindBinaries and Start when the
// PostgreSQL server binaries cannot be found.
var ErrNotInstalled = errors.New("postgresql server binaries (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin; install them with scripts/deps.sh (Debian: apt-get install postgresql)")

// ErrInUse is returned (wrapped) by Start when a running postmaster already
// holds the data directory.
var ErrInUse = errors.New("data directory is in use by a running postmaster")

// Superuser is the name of the cluster's superuser role (initdb -U).
const Superuser = "postgres"

// tempPattern names the temporary data directories Start makes.
const tempPattern = "lhcnp-pg-"

// maxSocketPath is the longest unix socket path the kernel accepts
// (sun_path is 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Server is one private PostgreSQL cluster. Its methods are safe for
// concurrent use.
type Server struct {
	opts    options
	binDir  string
	dataDir string
	sockDir string // "" when the data directory path is too long for a socket
	tempDir bool   // dataDir was created by Start and is removed by Close
	cred    *syscall.Credential
	logPath string

	op     sync.Mutex // serialises start, stop and close
	closed bool       // guarded by op

	mu   sync.Mutex // guards port and proc, never held while waiting
	port int
	proc *process // the running postmaster; nil when stopped
}

// process is one run of the postmaster.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	err    error         // cmd.Wait's result, valid once exited is closed
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

type options struct {
	dataDir      string
	copyOf       string
	port         int
	settings     map[string]string
	noSync       bool
	startTimeout time.Duration
	stopTimeout  time.Duration
}

// Option configures Start.
type Option func(*options)

// WithDataDir keeps the cluster in dir: created with initdb when dir is
// missing or empty, reused when it already holds a cluster. Without it Start
// makes a temporary directory that Close removes.
func WithDataDir(dir string) Option { return func(o *options) { o.dataDir = dir } }

// WithCopyOf creates a new cluster as a copy of the stopped cluster in dir
// (files, modes and, as root, the postgres user's ownership; not its log)
// instead of running initdb: what a test suite that starts many clusters
// uses, initdb costing seconds and the copy a fraction. A data directory
// that already holds a cluster is reused, as without it.
func WithCopyOf(dir string) Option { return func(o *options) { o.copyOf = dir } }

// WithPort listens on this TCP port of 127.0.0.1 instead of a free one.
func WithPort(port int) Option { return func(o *options) { o.port = port } }

// WithSetting passes a server setting (postgres -c name=value), e.g.
// WithSetting("max_connections", "200").
func WithSetting(name, value string) Option {
	return func(o *options) {
		if o.settings == nil {
			o.settings = map[string]string{}
		}
		o.settings[name] = value
	}
}

// WithoutDurability trades safety against an OS crash for speed, for
// throwaway clusters: initdb --no-sync, fsync and full_page_writes off. A
// commit still writes its WAL before it returns (synchronous_commit stays
// on), so a crash of the server process (Crash) loses nothing committed; a
// crash of the machine may lose the cluster.
func WithoutDurability() Option {
	return func(o *options) {
		o.noSync = true
		WithSetting("fsync", "off")(o)
		WithSetting("full_page_writes", "off")(o)
	}
}

// WithBoundedDisk configures a long-running cluster whose disk must stay
// small (`lhcnp lab`): at most about 64 MB of WAL (wal_level minimal, no
// WAL senders, no archiving, max_wal_size 64MB, min_wal_size 32MB, a
// checkpoint every 2 minutes or 64 MB, compressed full-page images), and
// an autovacuum that comes back every 10 s and vacuums a table once 5 % of
// it is dead or newly inserted, so the space of rows a retention deletes is
// reused instead of the tables growing. Left at PostgreSQL's defaults the
// WAL alone grows to 1 GB before the first checkpoint (max_wal_size).
// Durability is unchanged: commits and checkpoints are synced.
func WithBoundedDisk() Option {
	return func(o *options) {
		for _, kv := range boundedDiskSettings {
			WithSetting(kv[0], kv[1])(o)
		}
	}
}

// boundedDiskSettings are WithBoundedDisk's settings.
var boundedDiskSettings = [][2]string{
	{"wal_level", "minimal"},
	{"max_wal_senders", "0"},
	{"archive_mode", "off"},
	{"max_wal_size", "64MB"},
	{"min_wal_size", "32MB"},
	{"checkpoint_timeout", "2min"},
	{"wal_compression", "on"}, // PostgreSQL 15 shows it as pglz
	{"autovacuum_naptime", "10s"},
	{"autovacuum_vacuum_scale_factor", "0.05"},
	{"autovacuum_vacuum_insert_scale_factor", "0.05"},
	{"autovacuum_analyze_scale_factor", "0.05"},
}

// WithStartTimeout bounds how long Start waits for the server to accept
// connections (default 60 s; recovery after a crash can take a while).
func WithStartTimeout(d time.Duration) Option { return func(o *options) { o.startTimeout = d } }

// WithStopTimeout bounds how long Stop waits for a fast shutdown before it
// kills the postmaster (default 30 s).
func WithStopTimeout(d time.Duration) Option { return func(o *options) { o.stopTimeout = d } }

// FindBinaries returns the directory holding initdb and postgres: the one on
// PATH, else the newest /usr/lib/postgresql/VERSION/bin. The error wraps
// ErrNotInstalled.
func FindBinaries() (string, error) { return findBinaries("/usr/lib/postgresql/*/bin") }

// findBinaries is FindBinaries with the fallback's glob as a parameter.
func findBinaries(fallback string) (string, error) {
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if isExecutable(filepath.Join(dir, "initdb")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(fallback)
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "postgres")) && isExecutable(filepath.Join(dir, "initdb")) {
			return dir, nil
		}
	}
	return "", ErrNotInstalled
}

func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Start creates or reuses a cluster and starts its postmaster; it returns
// once the server accepts connections. A data directory held by a running
// postmaster is an error wrapping ErrInUse.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	o := options{startTimeout: 60 * time.Second, stopTimeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, binDir: binDir, port: o.port}
	if os.Geteuid() == 0 {
		cred, err := postgresCredential()
		if err != nil {
			return nil, err
		}
		s.cred = cred
	}
	if err := s.prepareDataDir(); err != nil {
		return nil, err
	}
	if err := s.initdb(ctx); err != nil {
		s.removeTemp()
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.removeTemp()
		return nil, err
	}
	return s, nil
}

// RemoveStaleTemp removes temporary data directories that Start made in
// os.TempDir and nobody closed (a test binary killed by its timeout: its
// postmaster stops by the parent-death signal, the directory stays), when no
// postmaster runs in them and they have not changed for maxAge. It returns
// the directories removed.
func RemoveStaleTemp(maxAge time.Duration) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), tempPattern+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() || time.Since(st.ModTime()) < maxAge {
			continue
		}
		if _, _, running := runningPostmaster(dir); running {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return removed, err
		}
		removed = append(removed, dir)
	}
	return removed, nil
}

// postgresCredential is the uid/gid of the postgres system user.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres system user, which does not exist (%v); install Debian's postgresql package with scripts/deps.sh", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user: bad uid %q or gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// prepareDataDir settles the data directory: a new temporary one, or the
// caller's, checked to be usable by the user the server runs as.
func (s *Server) prepareDataDir() error {
	if s.opts.dataDir == "" {
		dir, err := os.MkdirTemp("", tempPattern)
		if err != nil {
			return err
		}
		s.dataDir, s.tempDir = dir, true
	} else {
		dir, err := filepath.Abs(s.opts.dataDir)
		if err != nil {
			return err
		}
		s.dataDir = dir
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("data directory %s: %w", dir, err)
		}
	}
	if s.cred != nil {
		if err := reachable(s.dataDir, s.cred.Uid); err != nil {
			s.removeTemp()
			return err
		}
		if err := os.Chown(s.dataDir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			s.removeTemp()
			return fmt.Errorf("data directory %s: %w", s.dataDir, err)
		}
	}
	if len(filepath.Join(s.dataDir, ".s.PGSQL.65535.lock")) <= maxSocketPath {
		s.sockDir = s.dataDir
	}
	s.logPath = filepath.Join(s.dataDir, "lhcnp-postgres.log")
	return nil
}

// reachable checks that every ancestor of dir lets uid through, so that the
// postgres user can open its own data directory.
func reachable(dir string, uid uint32) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if ok && sys.Uid != uid && st.Mode().Perm()&0o001 == 0 {
			// d is often the state directory itself (mktemp -d makes it
			// 0700): say how to open it, not only to go elsewhere.
			return fmt.Errorf("data directory %s: the postgres user cannot reach it because %s is mode %04o (others may not enter it): chmod o+x %s, or choose a directory outside it",
				dir, d, st.Mode().Perm(), d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// initdb creates the cluster unless the data directory already holds one.
func (s *Server) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(s.dataDir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty and holds no PostgreSQL cluster (no PG_VERSION)", s.dataDir)
	}
	if s.opts.copyOf != "" {
		if err := s.copyCluster(s.opts.copyOf); err != nil {
			return fmt.Errorf("copying the cluster in %s to %s: %w", s.opts.copyOf, s.dataDir, err)
		}
		return nil
	}
	args := []string{"-D", s.dataDir, "-A", "trust", "-U", Superuser, "-E", "UTF8", "--locale=C", "--no-instructions"}
	if s.opts.noSync {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "initdb"), args...)
	cmd.Dir = s.dataDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb %s: %w: %s", s.dataDir, err, lastLines(string(out), 5))
	}
	return nil
}

// copyCluster copies the stopped cluster in src into the (empty) data
// directory, owned by the user the server runs as; the postmaster's pid
// file and src's log stay behind.
func (s *Server) copyCluster(src string) error {
	if _, err := os.Stat(filepath.Join(src, "PG_VERSION")); err != nil {
		return fmt.Errorf("no PostgreSQL cluster there: %w", err)
	}
	if _, err := os.Stat(filepath.Join(src, "postmaster.pid")); err == nil {
		return errors.New("its postmaster runs (postmaster.pid)")
	}
	logName := filepath.Base(s.logPath)
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		if rel == logName || rel == "postmaster.pid" {
			return nil
		}
		dst := filepath.Join(s.dataDir, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(dst, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(path); err == nil {
				err = os.Symlink(target, dst)
			}
		case d.Type().IsRegular():
			err = copyFile(path, dst, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: not a file, directory or symbolic link", path)
		}
		if err == nil && s.cred != nil {
			err = os.Lchown(dst, int(s.cred.Uid), int(s.cred.Gid))
		}
		return err
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// start runs the postmaster and waits until it accepts connections. A free
// port picked by us can be taken by someone else before the postmaster binds
// it; that case is retried with another port.
func (s *Server) start(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.closed {
		return errors.New("server closed")
	}
	if s.Running() {
		return nil
	}
	if pid, port, ok := runningPostmaster(s.dataDir); ok {
		return fmt.Errorf("%w: %s (pid %d, port %d)", ErrInUse, s.dataDir, pid, port)
	}
	pickPort := s.Port() == 0
	for attempt := 0; ; attempt++ {
		if pickPort {
			port, err := freePort()
			if err != nil {
				return err
			}
			s.mu.Lock()
			s.port = port
			s.mu.Unlock()
		}
		proc, err := s.launch(ctx)
		if err == nil {
			s.mu.Lock()
			s.proc = proc
			s.mu.Unlock()
			return nil
		}
		if pickPort && attempt < 3 && strings.Contains(err.Error(), "could not bind") {
			continue
		}
		return err
	}
}

// launch runs one postmaster and waits until it serves; s.op is held.
func (s *Server) launch(ctx context.Context) (*process, error) {
	args := []string{"-D", s.dataDir, "-p", strconv.Itoa(s.Port()),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.sockDir,
		"-c", "logging_collector=off"}
	names := make([]string, 0, len(s.opts.settings))
	for n := range s.opts.settings {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		args = append(args, "-c", n+"="+s.opts.settings[n])
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	logStart, _ := logFile.Seek(0, 2)
	// Not CommandContext: the server outlives the context that started it.
	cmd := exec.Command(filepath.Join(s.binDir, "postgres"), args...)
	cmd.Dir = s.dataDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: s.cred,
		// Its own process group: a Ctrl-C on the terminal reaches us, and we
		// stop the server in order.
		Setpgid: true,
		// Should this process die without Stop, the postmaster does a fast
		// shutdown instead of running on.
		Pdeathsig: syscall.SIGINT,
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal follows the thread that forked, not the
		// process (golang/go#27505): were that thread to end while the
		// postmaster runs, the postmaster would be stopped. So the fork
		// happens on a thread of its own that stays in cmd.Wait until the
		// postmaster is gone; it is never unlocked and ends with this
		// goroutine.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	err = <-started
	logFile.Close()
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if err := s.waitReady(ctx, p); err != nil {
		s.kill(p)
		return nil, fmt.Errorf("postgres %s: %w; log: %s", s.dataDir, err, s.logSince(logStart))
	}
	return p, nil
}

// waitReady polls until the server accepts a connection, the postmaster
// exits, or the start timeout passes.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgconn.Connect(cctx, s.DSN("postgres"))
		ccancel()
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("postmaster exited during start-up (%v)", p.err)
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections after %v: %w (last error: %v)", s.opts.startTimeout, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// kill stops a postmaster that failed to come up, or would not stop.
func (s *Server) kill(p *process) {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (s *Server) logSince(offset int64) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || offset > int64(len(b)) {
		return "(no log)"
	}
	return lastLines(string(b[offset:]), 8)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// runningPostmaster reports the postmaster holding dataDir, from its
// postmaster.pid, when that process is alive. A stale file left by a crash
// is not "running"; postgres removes it.
func runningPostmaster(dataDir string) (pid, port int, ok bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, 0, false
	}
	pid, port, ok = parsePostmasterPID(b)
	if !ok {
		return 0, 0, false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, 0, false
	}
	return pid, port, true
}

// parsePostmasterPID reads a postmaster.pid: the pid on the first line, the
// port on the fourth (0 when missing or not a number). ok is false when the
// first line is not a positive pid.
func parsePostmasterPID(b []byte) (pid, port int, ok bool) {
	lines := strings.SplitN(string(b), "\n", 5)
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	if len(lines) >= 4 {
		if p, err := strconv.Atoi(strings.TrimSpace(lines[3])); err == nil && p > 0 && p < 65536 {
			port = p
		}
	}
	return pid, port, true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DSN is the connection string of database dbname over TCP on 127.0.0.1, as
// the superuser.
func (s *Server) DSN(dbname string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, s.Port(), dbname)
}

// Port is the TCP port the server listens on (127.0.0.1).
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// DataDir is the cluster's data directory.
func (s *Server) DataDir() string { return s.dataDir }

// SocketDir is the directory of the unix socket, "" when there is none.
func (s *Server) SocketDir() string { return s.sockDir }

// LogPath is the file the server's log goes to.
func (s *Server) LogPath() string { return s.logPath }

// Running reports whether the postmaster is up (started and not stopped).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && s.proc.alive()
}

// Start starts a stopped server again on the same data directory and port,
// e.g. after Stop or Crash in a fault test. It is a no-op when the server
// runs.
func (s *Server) Start(ctx context.Context) error {
	return s.start(ctx)
}

// Stop shuts the server down with a fast shutdown (clients disconnected,
// everything written) and waits for it to exit; past the stop timeout it
// kills it. The data directory stays; Start starts it again.
func (s *Server) Stop() error {
	s.op.Lock()
	defer s.op.Unlock()
	return s.stopLocked(syscall.SIGINT)
}

// Crash stops the server as a power cut would look to clients: an immediate
// shutdown (SIGQUIT), so the next Start runs crash recovery.
func (s *Server) Crash() error {
	s.op.Lock()
	defer s.op.Unlock()
	return s.stopLocked(syscall.SIGQUIT)
}

// stopLocked signals the postmaster and waits for it; s.op is held.
func (s *Server) stopLocked(sig syscall.Signal) error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop postgres: %w", err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(s.opts.stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("postgres %s did not stop within %v; killed", s.dataDir, s.opts.stopTimeout)
	}
}

// Close stops the server and, when Start made the data directory, removes
// it. Close is idempotent.
func (s *Server) Close() error {
	s.op.Lock()
	defer s.op.Unlock()
	err := s.stopLocked(syscall.SIGINT)
	s.closed = true
	s.removeTemp()
	return err
}

func (s *Server) removeTemp() {
	if s.tempDir && s.dataDir != "" {
		_ = os.RemoveAll(s.dataDir)
	}
}

// CreateDatabase creates database name, as a copy of template when template
// is not "" (CREATE DATABASE ... TEMPLATE; nobody may be connected to the
// template meanwhile).
func (s *Server) CreateDatabase(ctx context.Context, name, template string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	return s.execAdmin(ctx, sql)
}

// DropDatabase drops database name if it exists, disconnecting its clients.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	return s.execAdmin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func (s *Server) execAdmin(ctx context.Context, sql string) error {
	return execOn(ctx, s.DSN("postgres"), sql)
}
