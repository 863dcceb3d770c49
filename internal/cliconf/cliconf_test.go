package cliconf_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/internal/cliconf"
)

type item struct {
	Name string   `yaml:"name"`
	Tags []string `yaml:"tags"`
}

type writer struct {
	BatchRows     int           `yaml:"batch_rows"`
	BatchInterval time.Duration `yaml:"batch_interval"`
	Fsync         bool          `yaml:"fsync"`
}

type conf struct {
	DSN    string  `yaml:"dsn"`
	Ratio  float64 `yaml:"ratio"`
	Limit  uint64  `yaml:"limit"`
	Writer writer  `yaml:"writer"`
	Items  []item  `yaml:"items"`
}

func defaults() conf {
	return conf{DSN: "default", Ratio: 0.5, Limit: 7, Writer: writer{BatchRows: 100, BatchInterval: time.Second}}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const file = `dsn: from-file
writer:
  batch_rows: 200
  batch_interval: 2s
items:
  - name: a
    tags: [x, y]
  - name: b
`

func TestLayers(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		file  string
		env   []string
		flags []string
		want  func(c *conf)
	}{
		{desc: "defaults", want: func(c *conf) {}},
		{desc: "file", file: file, want: func(c *conf) {
			c.DSN = "from-file"
			c.Writer.BatchRows, c.Writer.BatchInterval = 200, 2*time.Second
			c.Items = []item{{Name: "a", Tags: []string{"x", "y"}}, {Name: "b"}}
		}},
		{desc: "env", env: []string{"T_DSN=from-env", "T_WRITER_FSYNC=true", "T_RATIO=0.25", "OTHER_DSN=ignored"}, want: func(c *conf) {
			c.DSN, c.Writer.Fsync, c.Ratio = "from-env", true, 0.25
		}},
		{desc: "flags", flags: []string{"--dsn=from-flag", "--writer.batch-rows=5", "--limit=9"}, want: func(c *conf) {
			c.DSN, c.Writer.BatchRows, c.Limit = "from-flag", 5, 9
		}},
		{desc: "env over file", file: file, env: []string{"T_DSN=from-env"}, want: func(c *conf) {
			c.DSN = "from-env"
			c.Writer.BatchRows, c.Writer.BatchInterval = 200, 2*time.Second
			c.Items = []item{{Name: "a", Tags: []string{"x", "y"}}, {Name: "b"}}
		}},
		{desc: "flags over env and file", file: file, env: []string{"T_DSN=from-env", "T_WRITER_BATCH_ROWS=300"},
			flags: []string{"--dsn", "from-flag", "--writer.batch-interval=3s"}, want: func(c *conf) {
				c.DSN = "from-flag"
				c.Writer.BatchRows, c.Writer.BatchInterval = 300, 3*time.Second
				c.Items = []item{{Name: "a", Tags: []string{"x", "y"}}, {Name: "b"}}
			}},
		{desc: "a flag left at its default does not hide the file", file: file, flags: []string{"--ratio=0.5"}, want: func(c *conf) {
			c.DSN = "from-file"
			c.Writer.BatchRows, c.Writer.BatchInterval = 200, 2*time.Second
			c.Items = []item{{Name: "a", Tags: []string{"x", "y"}}, {Name: "b"}}
		}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := defaults()
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			c, err := cliconf.Register(fs, &got, cliconf.WithEnvPrefix("T_"), cliconf.WithEnviron(func() []string { return tt.env }))
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.flags); err != nil {
				t.Fatal(err)
			}
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			if err := c.Load(path); err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		desc string
		file string
		env  []string
		want string // the error, with FILE for the file's path
	}{
		{desc: "unknown top-level key", file: "dsn: x\nbogus: 1\n", want: "FILE:2: unknown key bogus"},
		{desc: "unknown nested key", file: "writer:\n  batch_rows: 1\n  batch_size: 2\n", want: "FILE:3: unknown key batch_size"},
		{desc: "unknown key in a list", file: "items:\n  - name: a\n  - nme: b\n", want: "FILE:3: unknown key nme"},
		{desc: "bad type", file: "writer:\n  batch_rows: many\n", want: "FILE:2: cannot unmarshal !!str `many` into int"},
		{desc: "bad duration", file: "writer:\n  batch_interval: soon\n", want: "FILE:2: cannot unmarshal !!str `soon` into time.Duration"},
		{desc: "syntax", file: "dsn: [x\n", want: "FILE:1: did not find expected ',' or ']'"},
		{desc: "unknown variable", env: []string{"T_DSNN=x"}, want: "environment: unknown variable T_DSNN (known: T_...)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := defaults()
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			c, err := cliconf.Register(fs, &got, cliconf.WithEnvPrefix("T_"), cliconf.WithEnviron(func() []string { return tt.env }))
			if err != nil {
				t.Fatal(err)
			}
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			err = c.Load(path)
			if err == nil {
				t.Fatal("no error")
			}
			if d := cmp.Diff(strings.ReplaceAll(tt.want, "FILE", path), err.Error()); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
}

func TestFlagsAndVariables(t *testing.T) {
	got := defaults()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, err := cliconf.Register(fs, &got, cliconf.WithEnvPrefix("LHCNP_T_"))
	if err != nil {
		t.Fatal(err)
	}
	var flags, envs []string
	for _, k := range c.Keys() {
		flags = append(flags, cliconf.FlagName(k))
		envs = append(envs, c.EnvName(k))
		if fs.Lookup(cliconf.FlagName(k)) == nil {
			t.Errorf("no flag for %s", k)
		}
	}
	wantFlags := []string{"dsn", "limit", "ratio", "writer.batch-interval", "writer.batch-rows", "writer.fsync"}
	if d := cmp.Diff(wantFlags, flags); d != "" {
		t.Errorf("flags (-want +got):\n%s", d)
	}
	wantEnv := []string{"LHCNP_T_DSN", "LHCNP_T_LIMIT", "LHCNP_T_RATIO", "LHCNP_T_WRITER_BATCH_INTERVAL", "LHCNP_T_WRITER_BATCH_ROWS", "LHCNP_T_WRITER_FSYNC"}
	if d := cmp.Diff(wantEnv, envs); d != "" {
		t.Errorf("variables (-want +got):\n%s", d)
	}
	if f := fs.Lookup("writer.batch-interval"); f.DefValue != "1s" {
		t.Errorf("default of writer.batch-interval = %q, want 1s", f.DefValue)
	}
	if _, err := cliconf.Register(fs, got); err == nil {
		t.Error("Register of a non-pointer: no error")
	}
}
