package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// requireBinaries skips (or fails, under CI or LHCNP_ORACLES=required) when
// the server binaries are missing.
func requireBinaries(t *testing.T) {
	t.Helper()
	if _, err := FindBinaries(); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// stateDir is a directory the postgres user can reach, like a lab's state
// directory (t.TempDir's parent is mode 0700).
func stateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgserver-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// withConn runs f on a connection to dsn.
func withConn(t *testing.T, dsn string, f func(ctx context.Context, conn *pgx.Conn) error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := f(ctx, conn); err != nil {
		t.Fatal(err)
	}
}

func queryInt(t *testing.T, dsn, sql string) (n int) {
	t.Helper()
	withConn(t, dsn, func(ctx context.Context, conn *pgx.Conn) error { return conn.QueryRow(ctx, sql).Scan(&n) })
	return n
}

func execSQL(t *testing.T, dsn, sql string) {
	t.Helper()
	withConn(t, dsn, func(ctx context.Context, conn *pgx.Conn) error { _, err := conn.Exec(ctx, sql); return err })
}

// TestLifecycle: a temporary cluster starts, serves, stops and starts again
// on the same port with its data, and Close removes its directory.
func TestLifecycle(t *testing.T) {
	requireBinaries(t)
	ctx := context.Background()
	s, err := Start(ctx, WithoutDurability())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !s.Running() {
		t.Fatal("Running() = false after Start")
	}
	if s.SocketDir() == "" {
		t.Errorf("no unix socket for data directory %s", s.DataDir())
	} else if _, err := os.Stat(filepath.Join(s.SocketDir(), ".s.PGSQL."+strconv.Itoa(s.Port()))); err != nil {
		t.Errorf("unix socket: %v", err)
	}
	if err := s.CreateDatabase(ctx, "tpl", ""); err != nil {
		t.Fatal(err)
	}
	execSQL(t, s.DSN("tpl"), "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)")
	if err := s.CreateDatabase(ctx, "copy", "tpl"); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, s.DSN("copy"), "SELECT count(*) FROM t"); got != 2 {
		t.Errorf("rows in the copy of the template = %d, want 2", got)
	}

	port := s.Port()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("Running() = true after Stop")
	}
	if _, err := pgx.Connect(ctx, s.DSN("copy")); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Port() != port {
		t.Errorf("port after restart = %d, want %d", s.Port(), port)
	}
	if got := queryInt(t, s.DSN("copy"), "SELECT count(*) FROM t"); got != 2 {
		t.Errorf("rows after restart = %d, want 2", got)
	}

	// An immediate shutdown, then crash recovery on the next start.
	execSQL(t, s.DSN("copy"), "INSERT INTO t VALUES (3)")
	if err := s.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, s.DSN("copy"), "SELECT count(*) FROM t"); got != 3 {
		t.Errorf("rows after crash recovery = %d, want 3", got)
	}

	if err := s.DropDatabase(ctx, "copy"); err != nil {
		t.Fatal(err)
	}
	dir := s.DataDir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary data directory %s still there after Close (%v)", dir, err)
	}
}

// TestBoundedDisk: WithBoundedDisk's settings are those the server runs
// with.
func TestBoundedDisk(t *testing.T) {
	requireBinaries(t)
	s, err := Start(context.Background(), WithoutDurability(), WithBoundedDisk())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var got, want []string
	withConn(t, s.DSN("postgres"), func(ctx context.Context, conn *pgx.Conn) error {
		for _, kv := range boundedDiskSettings {
			var v string
			if err := conn.QueryRow(ctx, "SELECT current_setting($1)", kv[0]).Scan(&v); err != nil {
				return err
			}
			if kv[0] == "wal_compression" && v == "pglz" {
				v = "on" // PostgreSQL 15's name of on
			}
			got = append(got, kv[0]+"="+v)
			want = append(want, kv[0]+"="+kv[1])
		}
		return nil
	})
	if !slices.Equal(got, want) {
		t.Errorf("settings %v, want %v", got, want)
	}
}

// keptIn starts a cluster in directory name of a state directory, with
// table kept holding 42; it is closed when the test ends.
func keptIn(t *testing.T, name string) (string, *Server) {
	t.Helper()
	requireBinaries(t)
	dir := filepath.Join(stateDir(t), name)
	s, err := Start(context.Background(), WithDataDir(dir), WithoutDurability())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	execSQL(t, s.DSN("postgres"), "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)")
	return dir, s
}

// TestReuseAndInUse: a lab's second start reuses its data directory; a
// second server on a directory in use fails with ErrInUse and harms nothing.
func TestReuseAndInUse(t *testing.T) {
	ctx := context.Background()
	dir, s := keptIn(t, "postgres")

	_, err := Start(ctx, WithDataDir(dir))
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Start on a data directory in use: err = %v, want ErrInUse", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory %s", err, dir)
	}
	if got := queryInt(t, s.DSN("postgres"), "SELECT x FROM kept"); got != 42 {
		t.Errorf("first server disturbed: x = %d", got)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Fatalf("Close removed a caller's data directory: %v", err)
	}
	s2, err := Start(ctx, WithDataDir(dir), WithStartTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	if got := queryInt(t, s2.DSN("postgres"), "SELECT x FROM kept"); got != 42 {
		t.Errorf("reused cluster: x = %d, want 42", got)
	}
}

// TestCopyOf: a cluster started as a copy of a stopped one has its data,
// not its log, and changes its own copy only; a running cluster is not
// copied.
func TestCopyOf(t *testing.T) {
	ctx := context.Background()
	seed, s := keptIn(t, "seed")
	if _, err := Start(ctx, WithCopyOf(seed), WithoutDurability()); err == nil || !strings.Contains(err.Error(), "postmaster") {
		t.Errorf("copy of a running cluster: err = %v, want one saying its postmaster runs", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	var copies [2]*Server
	for i := range copies {
		c, err := Start(ctx, WithCopyOf(seed), WithoutDurability())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		copies[i] = c
		execSQL(t, c.DSN("postgres"), fmt.Sprintf("INSERT INTO kept VALUES (%d)", i))
	}
	for i, c := range copies {
		if got := queryInt(t, c.DSN("postgres"), "SELECT sum(x) FROM kept"); got != 42+i {
			t.Errorf("copy %d: sum(x) = %d, want %d (the seed's row and its own)", i, got, 42+i)
		}
		log, err := os.ReadFile(c.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(log), "database system is ready to accept connections"); n != 1 {
			t.Errorf("copy %d: its log says ready %d times, want once (the seed's log is not copied)", i, n)
		}
	}
	if got := queryInt(t, copies[0].DSN("postgres"), "SELECT count(*) FROM kept"); got != 2 {
		t.Errorf("copy 0 has %d rows, want 2", got)
	}
}

// TestBadDataDir: a directory with foreign files is refused, not overwritten.
func TestBadDataDir(t *testing.T) {
	requireBinaries(t)
	dir := stateDir(t)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), WithDataDir(dir))
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Start on a non-empty foreign directory: err = %v, want a 'not empty' error", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "mine" {
		t.Error("foreign file changed")
	}
}

// TestUnreachableDataDir: a data directory below a directory others may
// not enter (mktemp -d's 0700, often the state directory itself) is
// refused naming that directory and how to open it.
func TestUnreachableDataDir(t *testing.T) {
	tmp := t.TempDir()
	for _, d := range []string{filepath.Dir(tmp), tmp} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	closed := filepath.Join(tmp, "state")
	data := filepath.Join(closed, "postgres")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	// A uid that owns none of the directories: the postgres user's view.
	err := reachable(data, uint32(os.Getuid())+4242)
	want := fmt.Sprintf("because %s is mode 0700 (others may not enter it): chmod o+x %s, or choose a directory outside it", closed, closed)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %q", err, want)
	}
	if err := os.Chmod(closed, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := reachable(data, uint32(os.Getuid())+4242); err != nil {
		t.Errorf("after chmod o+x: %v", err)
	}
}

// TestNotInstalled: without binaries the error tells how to install them.
func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findBinaries(filepath.Join(t.TempDir(), "*", "bin"))
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "scripts/deps.sh") {
		t.Fatalf("err = %v, want ErrNotInstalled naming scripts/deps.sh", err)
	}
}

// TestRemoveStaleTemp: an old abandoned temporary directory goes; a fresh
// one, and one whose postmaster runs, stay.
func TestRemoveStaleTemp(t *testing.T) {
	requireBinaries(t)
	old, err := os.MkdirTemp("", tempPattern)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := os.MkdirTemp("", tempPattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(old); os.RemoveAll(fresh) })
	s, err := Start(context.Background(), WithoutDurability())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	long := time.Now().Add(-2 * time.Hour)
	for _, dir := range []string{old, s.DataDir()} {
		if err := os.Chtimes(dir, long, long); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveStaleTemp(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, old) {
		t.Errorf("removed %q, want %s among them", removed, old)
	}
	for _, dir := range []string{fresh, s.DataDir()} {
		if slices.Contains(removed, dir) {
			t.Errorf("removed %s", dir)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestStopsWithParent: a process that started a server and dies without
// stopping it (a test binary killed by its timeout) takes the server down
// with it: the postmaster gets its parent-death signal.
func TestStopsWithParent(t *testing.T) {
	if os.Getenv("PGSERVER_TEST_CHILD") == "1" {
		s, err := Start(context.Background(), WithoutDurability())
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("postmaster", s.proc.cmd.Process.Pid, s.DataDir())
		os.Exit(0) // no Stop, no Close
	}
	requireBinaries(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopsWithParent$")
	cmd.Env = append(os.Environ(), "PGSERVER_TEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscanf(string(out), "postmaster %d %s", &pid, &dir); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Not our child: poll it, with a deadline.
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for processAlive(pid) {
		select {
		case <-deadline:
			syscall.Kill(pid, syscall.SIGQUIT)
			t.Fatalf("postmaster %d still running 30 s after its parent died", pid)
		case <-tick.C:
		}
	}
}

// processAlive reports whether pid runs (a zombie does not: the postmaster,
// orphaned, is reaped by whoever adopts it, maybe never).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
