package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// TestMigrateCommand runs `lhcnp migrate` against a real private cluster:
// status of an empty database, up (with a retention), down one step, up
// again, and the errors a user can make.
func TestMigrateCommand(t *testing.T) {
	srv, _ := pgtest.Private(t)
	if err := srv.CreateDatabase(context.Background(), "fresh", ""); err != nil {
		t.Fatal(err)
	}
	dsn := srv.DSN("fresh")
	latest := migrations.Latest()
	migrate := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = run(append([]string{"migrate"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := migrate("status", "--db", dsn)
	if code != 0 || !strings.Contains(out, "schema version 0 of ") || !strings.Contains(out, "  [ ] 001_tables.sql") {
		t.Fatalf("status of an empty database: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = migrate("up", "--db", dsn, "--retention", "240h", "--partitioning", "lhcnp")
	if code != 0 {
		t.Fatalf("up: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"up 001_tables.sql", "[x] 003_views.sql", "\nmode: PostgreSQL, one node\n", "kept by lhcnp, 4 days ahead, retention 10 days, last maintained 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("up: output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`schema version (\d+) of (\d+)\n`).MatchString(out) || strings.Contains(out, "pending") {
		t.Errorf("up: status after up:\n%s", out)
	}
	// The maintenance pass of up applied its horizon: the start of the
	// oldest UTC day a 10-day retention keeps.
	if m := regexp.MustCompile(`\nretention horizon: (\S+) \(nothing older is kept`).FindStringSubmatch(out); m == nil {
		t.Errorf("up: status lacks the retention horizon:\n%s", out)
	} else if h, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || !h.Equal(h.Truncate(24*time.Hour)) ||
		h.After(time.Now().Add(-240*time.Hour)) || h.Before(time.Now().Add(-264*time.Hour)) {
		t.Errorf("up: retention horizon %s (%v): want the start of the UTC day 10 days ago", m[1], err)
	}

	// Down to 023: every migration from 024 on, 024 holding the horizon.
	steps := latest - 23
	code, out, errOut = migrate("down", "--db", dsn, "--steps", fmt.Sprint(steps))
	if code != 0 || !strings.Contains(out, "down ") || !strings.Contains(out, fmt.Sprintf("(%d pending)", steps)) {
		t.Fatalf("down: exit %d\n%s%s", code, out, errOut)
	}
	// up --steps applies that many (it applied every pending one before).
	code, out, errOut = migrate("up", "--db", dsn, "--steps", "1")
	if code != 0 || strings.Count(out, "up ") != 1 || !strings.Contains(out, fmt.Sprintf("(%d pending)", steps-1)) {
		t.Fatalf("up --steps 1: exit %d, want one migration applied and %d pending\n%s%s", code, steps-1, out, errOut)
	}
	// Flags before the action work too; up is the default action.
	code, out, errOut = migrate("--db", dsn)
	if code != 0 || strings.Contains(out, "pending") {
		t.Fatalf("up by default: exit %d\n%s%s", code, out, errOut)
	}
	if st := out; !strings.Contains(st, fmt.Sprintf("schema version %d of %d", latest, latest)) {
		t.Errorf("after up again:\n%s", st)
	}
	// 024 down and up again forgot the horizon; 025 sets none (the
	// database stored no series), and the status says no pass recorded one.
	if want := "\nretention horizon: none (no retention pass has recorded one;"; !strings.Contains(out, want) {
		t.Errorf("after up again: status lacks %q:\n%s", want, out)
	}

	for _, tt := range []struct {
		desc     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown action", []string{"sideways", "--db", dsn}, 2, `unknown action "sideways"`},
		{"no database", []string{"status", "--db", ""}, 2, "--db: a connection string is required"},
		{"bad DSN", []string{"status", "--db", "postgres://x:y@:notaport/db"}, 2, "--db:"},
		{"unreachable", []string{"status", "--db", "postgres://postgres@127.0.0.1:1/x?connect_timeout=5", "--timeout", "10s"}, 1, "--db: connect to postgres@127.0.0.1:1/x"},
		{"bad steps", []string{"down", "--db", dsn, "--steps", "0"}, 2, "--steps: steps: 0: want 1 or more"},
		{"bad retention", []string{"up", "--db", dsn, "--retention", "a month"}, 2, `--retention: retention: "a month": want a duration such as 720h, or 0 for ever`},
		{"bad partitioning", []string{"up", "--db", srv.DSN("postgres"), "--partitioning", "weekly"}, 2, `--partitioning: partitioning: "weekly": want auto, pg_partman or lhcnp`},
		{"too far down", []string{"down", "--db", dsn, "--steps", "99"}, 1, "cannot go down 99 steps"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			code, _, errOut := migrate(tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 && tt.wantCode == 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line with %q", code, errOut, tt.wantCode, tt.wantErr)
			}
		})
	}

	// db.dsn is the collector's key name: --db.dsn, LHCNP_MIGRATE_DB_DSN and
	// a file's db: {dsn: ...}; --db and LHCNP_DB are its older names, still
	// read. Flags win over variables, the prefixed variable over LHCNP_DB,
	// variables over the file; a refused connection names the name the DSN
	// came from.
	t.Run("dsn names", func(t *testing.T) {
		unreachable := "postgres://postgres@127.0.0.1:1/x?connect_timeout=5"
		dir := t.TempDir()
		good := filepath.Join(dir, "good.yaml")
		bad := filepath.Join(dir, "bad.yaml")
		typo := filepath.Join(dir, "typo.yaml")
		for p, body := range map[string]string{good: "db:\n  dsn: " + dsn + "\n", bad: "db:\n  dsn: " + unreachable + "\n", typo: "db:\n  dns: x\n"} {
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			desc     string
			env      map[string]string
			args     []string
			wantCode int
			wantErr  string
		}{
			{desc: "--db.dsn", args: []string{"--db.dsn", dsn}},
			{desc: "LHCNP_MIGRATE_DB_DSN", env: map[string]string{"LHCNP_MIGRATE_DB_DSN": dsn}},
			{desc: "LHCNP_DB", env: map[string]string{"LHCNP_DB": dsn}},
			{desc: "the file's db.dsn", args: []string{"--config", good}},
			{desc: "LHCNP_MIGRATE_DB_DSN over LHCNP_DB", env: map[string]string{"LHCNP_DB": unreachable, "LHCNP_MIGRATE_DB_DSN": dsn}},
			{desc: "LHCNP_DB over the file", env: map[string]string{"LHCNP_DB": dsn}, args: []string{"--config", bad}},
			{desc: "--db over the variables", env: map[string]string{"LHCNP_DB": unreachable, "LHCNP_MIGRATE_DB_DSN": unreachable}, args: []string{"--db", dsn}},
			{desc: "--db.dsn over the variables", env: map[string]string{"LHCNP_MIGRATE_DB_DSN": unreachable}, args: []string{"--db.dsn=" + dsn}},
			{desc: "LHCNP_MIGRATE_DB_DSN named", env: map[string]string{"LHCNP_MIGRATE_DB_DSN": unreachable}, wantCode: 1,
				wantErr: "LHCNP_MIGRATE_DB_DSN: connect to postgres@127.0.0.1:1/x"},
			{desc: "LHCNP_DB named", env: map[string]string{"LHCNP_DB": unreachable}, wantCode: 1, wantErr: "LHCNP_DB: connect to postgres@127.0.0.1:1/x"},
			{desc: "the file named", args: []string{"--config", bad}, wantCode: 1, wantErr: bad + ": db.dsn: connect to postgres@127.0.0.1:1/x"},
			{desc: "--db.dsn named", args: []string{"--db.dsn", unreachable}, wantCode: 1, wantErr: "--db.dsn: connect to postgres@127.0.0.1:1/x"},
			{desc: "both flags", args: []string{"--db", dsn, "--db.dsn", dsn}, wantCode: 2, wantErr: "flags --db and --db.dsn both set db.dsn: give one"},
			{desc: "none", wantCode: 2, wantErr: "db.dsn: a connection string is required (--db.dsn or --db, LHCNP_MIGRATE_DB_DSN or LHCNP_DB)"},
			{desc: "unknown key", args: []string{"--config", typo}, wantCode: 2, wantErr: typo + ":2:3: unknown key db.dns"},
			{desc: "unknown variable", env: map[string]string{"LHCNP_MIGRATE_DSN": dsn}, wantCode: 2, wantErr: "environment: unknown variable LHCNP_MIGRATE_DSN"},
		} {
			t.Run(tt.desc, func(t *testing.T) {
				for _, name := range []string{"LHCNP_DB", "LHCNP_MIGRATE_DB_DSN", "LHCNP_MIGRATE_DSN"} {
					t.Setenv(name, tt.env[name]) // restored after the test
					if _, ok := tt.env[name]; !ok {
						os.Unsetenv(name)
					}
				}
				code, out, errOut := migrate(append([]string{"status"}, tt.args...)...)
				if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
					t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tt.wantCode, tt.wantErr)
				}
				if tt.wantCode == 0 && !strings.Contains(out, fmt.Sprintf("schema version %d of %d", latest, latest)) {
					t.Errorf("status of the test database:\n%s", out)
				}
			})
		}
	})
}

// TestMigrateBadValuesNamed: steps, retention and partitioning are keys of
// lhcnp migrate (flags, LHCNP_MIGRATE_ variables, the file's), so a bad
// value reads ORIGIN: key: value: why, ORIGIN where it came from, and is
// refused before the database is reached, exit status 2 (docs/collector.md,
// "Exit status"). Before, steps and retention named their flag whatever set
// them (LHCNP_MIGRATE_STEPS=0 read "--steps: 0: ..."), and a partition
// manager that does not exist was found once connected, exit status 1.
func TestMigrateBadValuesNamed(t *testing.T) {
	unreachable := "postgres://postgres@127.0.0.1:1/x?connect_timeout=5"
	file := filepath.Join(t.TempDir(), "migrate.yaml")
	if err := os.WriteFile(file, []byte("db:\n  dsn: "+unreachable+"\nsteps: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pfile := filepath.Join(t.TempDir(), "partitioning.yaml")
	if err := os.WriteFile(pfile, []byte("partitioning: weekly\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc string
		env  map[string]string
		args []string
		want string
	}{
		{"steps flag", nil, []string{"down", "--db.dsn", unreachable, "--steps", "0"}, "--steps: steps: 0: want 1 or more"},
		{"steps variable", map[string]string{"LHCNP_MIGRATE_STEPS": "0"}, []string{"down", "--db.dsn", unreachable},
			"LHCNP_MIGRATE_STEPS: steps: 0: want 1 or more"},
		{"steps file", nil, []string{"down", "--config", file}, file + ":3:8: steps: 0: want 1 or more"},
		{"retention flag", nil, []string{"up", "--db.dsn", unreachable, "--retention", "a month"},
			`--retention: retention: "a month": want a duration such as 720h, or 0 for ever`},
		{"retention variable", map[string]string{"LHCNP_MIGRATE_RETENTION": "-1h"}, []string{"up", "--db.dsn", unreachable},
			`LHCNP_MIGRATE_RETENTION: retention: "-1h": want a duration such as 720h, or 0 for ever`},
		{"partitioning flag", nil, []string{"up", "--db.dsn", unreachable, "--partitioning", "weekly"},
			`--partitioning: partitioning: "weekly": want auto, pg_partman or lhcnp`},
		{"partitioning variable", map[string]string{"LHCNP_MIGRATE_PARTITIONING": "weekly"}, []string{"up", "--db.dsn", unreachable},
			`LHCNP_MIGRATE_PARTITIONING: partitioning: "weekly": want auto, pg_partman or lhcnp`},
		{"partitioning file", nil, []string{"up", "--config", pfile, "--db.dsn", unreachable},
			pfile + `:1:15: partitioning: "weekly": want auto, pg_partman or lhcnp`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			for _, name := range []string{"LHCNP_DB", "LHCNP_MIGRATE_DB_DSN", "LHCNP_MIGRATE_STEPS", "LHCNP_MIGRATE_RETENTION", "LHCNP_MIGRATE_PARTITIONING"} {
				t.Setenv(name, tt.env[name]) // restored after the test
				if _, ok := tt.env[name]; !ok {
					os.Unsetenv(name)
				}
			}
			var out, errOut bytes.Buffer
			code := run(append([]string{"migrate"}, tt.args...), &out, &errOut)
			if want := "lhcnp migrate: " + tt.want + "\n"; code != 2 || errOut.String() != want {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut.String(), want)
			}
		})
	}
}

// TestMigrateCitus: on a Citus coordinator, `lhcnp migrate up` distributes
// the tables, status says so, and down two steps (012_citus_views, then
// 011_citus) puts them back on one node.
func TestMigrateCitus(t *testing.T) {
	t.Parallel()
	c := pgtest.PrivateCitus(t, 2)
	if err := c.CreateDatabase(context.Background(), "lhcnp"); err != nil {
		t.Fatal(err)
	}
	dsn := c.DSN("lhcnp")
	migrate := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = run(append([]string{"migrate"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	for _, tt := range []struct {
		desc     string
		args     []string
		wantMode string
	}{
		{"status before", []string{"status", "--db", dsn}, "mode: PostgreSQL, one node (citus installed, 2 workers, tables not distributed)\n"},
		{"up", []string{"up", "--db", dsn}, "mode: Citus coordinator with 2 workers;"},
		// Below 11, the schema that distributes the tables, whatever
		// came after it.
		{"down to 10", []string{"down", "--steps", strconv.Itoa(int(migrations.Latest()) - 10), "--db", dsn}, "mode: PostgreSQL, one node (citus installed, 2 workers, tables not distributed)\n"},
		{"up again", []string{"up", "--db", dsn}, "mode: Citus coordinator with 2 workers;"},
	} {
		code, out, errOut := migrate(tt.args...)
		if code != 0 || !strings.Contains(out, "\n"+tt.wantMode) {
			t.Errorf("%s: exit %d, want 0 and %q in:\n%s%s", tt.desc, code, tt.wantMode, out, errOut)
		}
	}
}

// TestDialErrorOnce: a database that does not answer is named once per
// address pgx tried. With sslmode=prefer (the default) pgx dials each
// address twice, with TLS and without, and lists both failures; migrate,
// the collector and the tuner printed the same dial error twice (the
// tuner on three lines).
func TestDialErrorOnce(t *testing.T) {
	addr, dsn := closedPortDSN(t)
	write := fileWriter(t, t.TempDir())
	ctx := context.Background()
	for _, tt := range []struct {
		desc string
		run  func() error
	}{
		{"migrate", func() error { return runMigrate(ctx, []string{"up", "--db.dsn", dsn}, io.Discard, io.Discard) }},
		{"collector", func() error {
			return runCollector(ctx, []string{"--config", write("collector.yaml", "db: {dsn: \""+dsn+"\"}\n")}, io.Discard, io.Discard)
		}},
		{"tuner", func() error {
			cfg := write("tuner.yaml", "db: "+dsn+"\nswitches:\n  - {name: n1, address: 127.0.0.1:9339, insecure: true}\n")
			return runTuner(ctx, []string{"--config", cfg}, io.Discard, io.Discard)
		}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			err := tt.run()
			if err == nil {
				t.Fatal("no error")
			}
			if n := strings.Count(err.Error(), "dial tcp "+addr); n != 1 || strings.Contains(err.Error(), "\n") {
				t.Errorf("the dial error %d times (want once, on one line):\n%v", n, err)
			}
		})
	}
}

// closedPortDSN returns a loopback address whose port is closed (every
// dial refused) and a DSN of it.
func closedPortDSN(t *testing.T) (addr, dsn string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = lis.Addr().String()
	lis.Close()
	return addr, "postgres://lhcnp@" + addr + "/lhcnp?connect_timeout=5"
}

// TestLabDBErrorOneLine: lhcnp lab's error of a database it cannot use is
// one line, each pgx attempt once, whichever part meets it first: the
// tuner's pool (built first) or the collector (--tuner=false). A DSN pgx
// cannot parse is quoted in its error, line break and all; a closed port
// is dialled twice (sslmode=prefer). It failed before: the tuner's pool
// returned pgx's error as it was, over two lines.
func TestLabDBErrorOneLine(t *testing.T) {
	addr, dsn := closedPortDSN(t)
	for _, tt := range []struct {
		desc, dsn, want string
		args            []string
	}{
		{"unreachable", dsn, "dial tcp " + addr, nil},
		{"unreachable, no tuner", dsn, "dial tcp " + addr, []string{"--tuner=false"}},
		{"a line break", dsn + "\nx", "cannot parse", nil},
		{"a line break, no tuner", dsn + "\nx", "cannot parse", []string{"--tuner=false"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := append([]string{"--state-dir", t.TempDir(), "--http", "127.0.0.1:0", "--listen", "127.0.0.1:0",
				"--metrics", "127.0.0.1:0", "--northbound", "127.0.0.1:0", "--fabric", "../../examples/lab.yaml", "--postgres", tt.dsn}, tt.args...)
			err := runLab(context.Background(), args, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			if n := strings.Count(err.Error(), tt.want); n != 1 || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q %d times (want once, on one line):\n%v", tt.want, n, err)
			}
		})
	}
}

// TestMigrateStepsHelp: steps has no default of its own, so the help does
// not end its line with the flag package's "(default 1)", which read as
// up's too (up applies every pending migration when steps is not given).
func TestMigrateStepsHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"migrate", "-h"}, &out, &errOut); code != 0 {
		t.Fatalf("migrate -h: exit %d\n%s", code, errOut.String())
	}
	help := out.String() + errOut.String()
	i := strings.Index(help, "-steps")
	if i < 0 {
		t.Fatalf("no -steps in the help:\n%s", help)
	}
	line := help[i:]
	if j := strings.Index(line, "\n  -"); j >= 0 {
		line = line[:j]
	}
	if strings.Contains(line, "(default") || !strings.Contains(line, "every pending one") || !strings.Contains(line, "not given: 1") {
		t.Errorf("the help of -steps: %q: want up's and down's defaults in words, no (default …)", line)
	}
}
