package cliconf_test

import (
	"errors"
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

// layer registers dst on fs with the prefix T_ and env, parses flags and
// loads body as the file (none if ""); it returns the Config and the path.
func layer(t *testing.T, fs *flag.FlagSet, dst any, body string, env, flags []string, opts ...cliconf.Option) (*cliconf.Config, string) {
	t.Helper()
	opts = append([]cliconf.Option{cliconf.WithEnvPrefix("T_"), cliconf.WithEnviron(func() []string { return env })}, opts...)
	c, err := cliconf.Register(fs, dst, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	path := ""
	if body != "" {
		path = writeFile(t, body)
	}
	if err := c.Load(path); err != nil {
		t.Fatal(err)
	}
	return c, path
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
			layer(t, flag.NewFlagSet("t", flag.ContinueOnError), &got, tt.file, tt.env, tt.flags)
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
		{desc: "unknown top-level key", file: "dsn: x\nbogus: 1\n", want: "FILE:2:1: unknown key bogus"},
		// yaml.v3 names the last segment only (batch_size, nme).
		{desc: "unknown nested key", file: "writer:\n  batch_rows: 1\n  batch_size: 2\n", want: "FILE:3:3: unknown key writer.batch_size"},
		{desc: "unknown key in a list", file: "items:\n  - name: a\n  - nme: b\n", want: "FILE:3:5: unknown key items[1].nme"},
		{desc: "unknown key in flow style", file: "items: [{name: a}, {name: b, tgs: [x]}]\n", want: "FILE:1:30: unknown key items[1].tgs"},
		{desc: "two unknown keys", file: "writer:\n  rows: 1\ndsm: x\n", want: "FILE:2:3: unknown key writer.rows; FILE:3:1: unknown key dsm"},
		{desc: "bad type", file: "writer:\n  batch_rows: many\n", want: "FILE:2:15: writer.batch_rows: cannot unmarshal !!str `many` into int"},
		{desc: "bad duration", file: "writer:\n  batch_interval: soon\n", want: "FILE:2:19: writer.batch_interval: cannot unmarshal !!str `soon` into time.Duration"},
		{desc: "duration without unit", file: "writer:\n  batch_interval: 5\n", want: "FILE:2:19: writer.batch_interval: cannot unmarshal !!int `5` into time.Duration"},
		{desc: "number quoted", file: "writer:\n  batch_rows: \"10\"\n", want: "FILE:2:15: writer.batch_rows: cannot unmarshal !!str `10` into int"},
		{desc: "integer overflowing", file: "writer:\n  batch_rows: 99999999999999999999\n", want: "FILE:2:15: writer.batch_rows: cannot unmarshal !!float `9999999...` into int"},
		{desc: "negative into unsigned", file: "limit: -1\n", want: "FILE:1:8: limit: cannot unmarshal !!int `-1` into uint64"},
		// yaml.v3 named the line and the Go type only: not the key, for
		// a list or a mapping, nor when keys share a line.
		{desc: "a list for a mapping", file: "writer:\n  - batch_rows: 1\n", want: "FILE:2:3: writer: a list, want a mapping"},
		{desc: "a scalar for a mapping", file: "writer: fast\n", want: "FILE:1:9: writer: `fast`, want a mapping"},
		{desc: "a mapping for a list", file: "items: {name: a}\n", want: "FILE:1:8: items: a mapping, want a list"},
		{desc: "a list for a scalar", file: "dsn: [a, b]\n", want: "FILE:1:6: dsn: cannot unmarshal !!seq into string"},
		{desc: "a mapping for a scalar in a list", file: "items:\n  - name: {first: a}\n", want: "FILE:2:11: items[0].name: cannot unmarshal !!map into string"},
		{desc: "two keys on the line", file: "writer: {batch_rows: many, batch_interval: 1s}\n", want: "FILE:1:22: writer.batch_rows: cannot unmarshal !!str `many` into int"},
		{desc: "the second key on the line", file: "writer: {batch_rows: 1, batch_interval: soon}\n", want: "FILE:1:41: writer.batch_interval: cannot unmarshal !!str `soon` into time.Duration"},
		{desc: "a tag forcing a string", file: "ratio: !!str 1\n", want: "FILE:1:8: ratio: cannot unmarshal !!str `1` into float64"},
		{desc: "a merged mapping's key", file: "writer:\n  <<: {batch_rows: 1, rows: 2}\n  fsync: true\n", want: "FILE:2:23: unknown key writer.rows"},
		{desc: "an anchor's bad value through its alias", file: "dsn: &d [x]\nwriter: {batch_rows: 1}\n", want: "FILE:1:6: dsn: cannot unmarshal !!seq into string"},
		// yaml.v3 names line 1 for both: the end of the file, and the
		// line above the tab.
		{desc: "syntax", file: "dsn: [x\n", want: "FILE:2:1: did not find expected ',' or ']'"},
		{desc: "tab", file: "writer:\n  batch_rows: 1\n\tbatch_interval: 1s\n", want: "FILE:3:1: a tab in the indentation (YAML indents with spaces only)"},
		{desc: "unknown variable", env: []string{"T_DSNN=x"}, want: "environment: unknown variable T_DSNN (known: T_...)"},
		{desc: "variable not of its key's type", env: []string{"T_WRITER_BATCH_ROWS=many"}, want: `T_WRITER_BATCH_ROWS="many": not of type int`},
		{desc: "variable not a duration", file: "dsn: x\n", env: []string{"T_WRITER_BATCH_INTERVAL=soon"}, want: `T_WRITER_BATCH_INTERVAL="soon": not of type time.Duration`},
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
			if !errors.Is(err, cliconf.ErrConfig) {
				t.Error("the error does not match ErrConfig")
			}
		})
	}
}

// TestErrConfig: the errors of the flags' parse, of a file that cannot be
// read and of Locate match ErrConfig (a command's exit status 2, not 1),
// with their own messages; -h is flag.ErrHelp alone.
func TestErrConfig(t *testing.T) {
	parse := func(args ...string) error {
		var got conf
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if _, err := cliconf.Register(fs, &got); err != nil {
			t.Fatal(err)
		}
		_, err := cliconf.ParseInterspersed(fs, args)
		return err
	}
	// Two: a Load sets the file Locate names.
	var got, got2 conf
	c, _ := layer(t, flag.NewFlagSet("t", flag.ContinueOnError), &got, "", nil, nil)
	c2, _ := layer(t, flag.NewFlagSet("t", flag.ContinueOnError), &got2, "", nil, nil)
	missing := filepath.Join(t.TempDir(), "none.yaml")
	for _, tt := range []struct {
		desc string
		err  error
		want string
	}{
		{"unknown flag", parse("a", "--bogus"), "unknown flag --bogus (lhcnp t -h lists them)"},
		{"flag not of its type", parse("--writer.batch-rows=many"), `--writer.batch-rows="many": not of type int`},
		{"unreadable file", c2.Load(missing), "open " + missing + ": no such file or directory"},
		{"a check's refusal", c.Locate(errors.New("ratio: 2 is above 1")), "ratio: 2 is above 1"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if tt.err == nil || tt.err.Error() != tt.want || !errors.Is(tt.err, cliconf.ErrConfig) {
				t.Errorf("error %v (matches ErrConfig: %v), want %q matching ErrConfig", tt.err, errors.Is(tt.err, cliconf.ErrConfig), tt.want)
			}
		})
	}
	if err := parse("-h"); err != flag.ErrHelp {
		t.Errorf("-h: %v, want flag.ErrHelp as it is", err)
	}
}

// TestFlagAndVariableSayOneType: a value not of its key's type names the
// same type whether a flag or a variable gave it. An int key's flag said
// int64 (every signed key was an Int64 flag) where its variable said int;
// a uint key's, uint64. A number too large for it is out of the range of
// the type for both.
func TestFlagAndVariableSayOneType(t *testing.T) {
	type typed struct {
		I   int           `yaml:"i"`
		I64 int64         `yaml:"i64"`
		U   uint          `yaml:"u"`
		U64 uint64        `yaml:"u64"`
		F   float64       `yaml:"f"`
		D   time.Duration `yaml:"d"`
		B   bool          `yaml:"b"`
	}
	const big = "99999999999999999999"
	for _, tt := range []struct{ key, value, want string }{
		{"i", "x", "not of type int"}, {"i64", "x", "not of type int64"}, {"u", "x", "not of type uint"}, {"u64", "x", "not of type uint64"},
		{"f", "x", "not of type float64"}, {"d", "x", "not of type time.Duration"}, {"b", "x", "not of type bool"},
		// A number too large: the variable said "not of type int".
		{"i", big, "out of the range of type int"}, {"u64", big, "out of the range of type uint64"},
		{"f", "1e999", "out of the range of type float64"},
	} {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			var got typed
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			if _, err := cliconf.Register(fs, &got); err != nil {
				t.Fatal(err)
			}
			_, err := cliconf.ParseInterspersed(fs, []string{"--" + tt.key + "=" + tt.value})
			if want := "--" + tt.key + `="` + tt.value + `": ` + tt.want; err == nil || err.Error() != want {
				t.Errorf("flag: %v, want %q", err, want)
			}
			name := "T_" + strings.ToUpper(tt.key)
			fs = flag.NewFlagSet("t", flag.ContinueOnError)
			c, err := cliconf.Register(fs, &got, cliconf.WithEnvPrefix("T_"), cliconf.WithEnviron(func() []string { return []string{name + "=" + tt.value} }))
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			if err, want := c.Load(""), name+`="`+tt.value+`": `+tt.want; err == nil || err.Error() != want {
				t.Errorf("variable: %v, want %q", err, want)
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

// renamed has a key whose flag the command already uses for its file.
type renamed struct {
	Config string `yaml:"config" flag:"initial-config"`
	DB     struct {
		DSN string `yaml:"dsn"`
	} `yaml:"db"`
	Speed float64       `yaml:"speed"`
	Every time.Duration `yaml:"every"`
}

// TestRenamesAliasesOrigins: a flag tag renames a key's flag (the variable
// keeps the key's name), aliases keep older names working under the key's
// own, and Origin names the layer of each value.
func TestRenamesAliasesOrigins(t *testing.T) {
	for _, tt := range []struct {
		desc       string
		file       string
		env, flags []string
		want       renamed
		origin     map[string]string // key → origin, FILE for the file
		inFile     []string
	}{
		{desc: "renamed flag", flags: []string{"--initial-config=c.json"}, want: renamed{Config: "c.json"},
			origin: map[string]string{"config": "--initial-config", "db.dsn": "", "speed": ""}},
		{desc: "renamed key's variable", env: []string{"T_CONFIG=e.json"}, want: renamed{Config: "e.json"},
			origin: map[string]string{"config": "T_CONFIG"}},
		{desc: "alias variable", env: []string{"OLD_DB=old"}, want: renamed{DB: struct {
			DSN string `yaml:"dsn"`
		}{"old"}},
			origin: map[string]string{"db.dsn": "OLD_DB"}},
		{desc: "alias variable over the file", file: "db: {dsn: file}\n", env: []string{"OLD_DB=old"},
			want: renamed{DB: struct {
				DSN string `yaml:"dsn"`
			}{"old"}}, origin: map[string]string{"db.dsn": "OLD_DB"}, inFile: []string{"db.dsn"}},
		{desc: "the key's variable over the alias", env: []string{"OLD_DB=old", "T_DB_DSN=new"},
			want: renamed{DB: struct {
				DSN string `yaml:"dsn"`
			}{"new"}}, origin: map[string]string{"db.dsn": "T_DB_DSN"}},
		{desc: "alias flag over variables", env: []string{"OLD_DB=old", "T_DB_DSN=new"}, flags: []string{"--db", "flag"},
			want: renamed{DB: struct {
				DSN string `yaml:"dsn"`
			}{"flag"}}, origin: map[string]string{"db.dsn": "--db"}},
		{desc: "file < env < flag", file: "speed: 2\nevery: 1s\n", env: []string{"T_SPEED=3", "T_EVERY=2s"}, flags: []string{"--every=3s"},
			want: renamed{Speed: 3, Every: 3 * time.Second}, origin: map[string]string{"speed": "T_SPEED", "every": "--every"},
			inFile: []string{"every", "speed"}},
		{desc: "file only", file: "speed: 2\n", want: renamed{Speed: 2}, origin: map[string]string{"speed": "FILE", "every": ""},
			inFile: []string{"speed"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var got renamed
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.String("config", "", "the command's own file")
			c, path := layer(t, fs, &got, tt.file, tt.env, tt.flags,
				cliconf.WithFlagAlias("db", "db.dsn"), cliconf.WithEnvAlias("OLD_DB", "db.dsn"))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
			for key, want := range tt.origin {
				if got := c.Origin(key); got != strings.ReplaceAll(want, "FILE", path) {
					t.Errorf("Origin(%s) = %q, want %q", key, got, want)
				}
			}
			var inFile []string
			for _, k := range c.Keys() {
				if c.InFile(k) {
					inFile = append(inFile, k)
				}
			}
			if d := cmp.Diff(tt.inFile, inFile); d != "" {
				t.Errorf("keys in the file (-want +got):\n%s", d)
			}
			if c.Flag("config") != "initial-config" || c.EnvName("config") != "T_CONFIG" {
				t.Errorf("config: flag %q, variable %q; want initial-config, T_CONFIG", c.Flag("config"), c.EnvName("config"))
			}
		})
	}
}

// TestEmptyVariableIsUnset: a variable set to "" (compose's ${VAR} of an
// unset VAR, a unit's VAR=) is as if it were not set: the file's value or
// the default stays, its origin too, an alias's as well, and an unknown
// one is not refused. It overrode the file's value with "" (LHCNP_TUNER_DB=
// made the tuner say db: missing).
func TestEmptyVariableIsUnset(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		file   string
		env    []string
		want   renamed
		origin map[string]string // key → origin, FILE for the file
	}{
		{desc: "over the file", file: "db: {dsn: file}\nspeed: 2\n", env: []string{"T_DB_DSN=", "T_SPEED="},
			want: renamed{DB: struct {
				DSN string `yaml:"dsn"`
			}{"file"}, Speed: 2, Every: time.Minute}, origin: map[string]string{"db.dsn": "FILE", "speed": "FILE"}},
		{desc: "over the default", env: []string{"T_EVERY="}, want: renamed{Every: time.Minute}, origin: map[string]string{"every": ""}},
		{desc: "an alias", file: "db: {dsn: file}\n", env: []string{"OLD_DB="},
			want: renamed{DB: struct {
				DSN string `yaml:"dsn"`
			}{"file"}, Every: time.Minute}, origin: map[string]string{"db.dsn": "FILE"}},
		{desc: "an empty variable under a set alias", env: []string{"OLD_DB=old", "T_DB_DSN="},
			want: renamed{DB: struct {
				DSN string `yaml:"dsn"`
			}{"old"}, Every: time.Minute}, origin: map[string]string{"db.dsn": "OLD_DB"}},
		{desc: "an unknown one", env: []string{"T_NOPE="}, want: renamed{Every: time.Minute}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := renamed{Every: time.Minute}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			c, path := layer(t, fs, &got, tt.file, tt.env, nil, cliconf.WithEnvAlias("OLD_DB", "db.dsn"))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
			for key, want := range tt.origin {
				if got := c.Origin(key); got != strings.ReplaceAll(want, "FILE", path) {
					t.Errorf("Origin(%s) = %q, want %q", key, got, want)
				}
			}
		})
	}
}

func TestRenamesAliasesErrors(t *testing.T) {
	var v renamed
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, err := cliconf.Register(fs, &v, cliconf.WithFlagAlias("db", "db.dsn"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--db=a", "--db.dsn=b"}); err != nil {
		t.Fatal(err)
	}
	if err, want := c.Load(""), "flags --db and --db.dsn both set db.dsn: give one"; err == nil || err.Error() != want {
		t.Errorf("both flags: %v, want %q", err, want)
	}
	for _, tt := range []struct {
		desc string
		fs   func() *flag.FlagSet
		opts []cliconf.Option
		want string
	}{
		{"taken flag", func() *flag.FlagSet {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.String("speed", "", "")
			return fs
		}, nil, "cliconf: flag --speed is already defined (key speed)"},
		{"alias of no key", func() *flag.FlagSet { return flag.NewFlagSet("t", flag.ContinueOnError) },
			[]cliconf.Option{cliconf.WithFlagAlias("x", "db")}, "cliconf: flag alias --x: no scalar key db"},
		{"alias taking a flag", func() *flag.FlagSet { return flag.NewFlagSet("t", flag.ContinueOnError) },
			[]cliconf.Option{cliconf.WithFlagAlias("speed", "db.dsn")}, "cliconf: flag --speed is already defined"},
		{"variable alias of no key", func() *flag.FlagSet { return flag.NewFlagSet("t", flag.ContinueOnError) },
			[]cliconf.Option{cliconf.WithEnvAlias("X", "nope")}, "cliconf: variable alias X: no scalar key nope"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var v renamed
			_, err := cliconf.Register(tt.fs(), &v, tt.opts...)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Register: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestLocate: a command's check of the loaded configuration names each
// key; Locate puts where its value came from in front: the file's line
// and column for a key the file sets (a scalar's value, a list's or a
// mapping's key; a list item by index or by name, or the nearest
// enclosing key the file sets), the variable or flag that set it, the
// file alone for a default.
func TestLocate(t *testing.T) {
	var got conf
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, path := layer(t, fs, &got, file, []string{"T_RATIO=2"}, []string{"--limit=9"})
	check := errors.Join(
		errors.New("writer.batch_rows: must be below 100"),
		errors.New("items[b].tags: missing"),
		errors.New("items[0].tags[1]: unknown tag"),
		errors.New("writer.fsync: needs batch_rows above 1000"),
		errors.New("ratio: 2 is above 1"),
		errors.New("limit: 9 is odd"),
		errors.New("dsn: a DSN without a host"),
		errors.New("something without a key"),
		errors.New(path+": already located"),
	)
	err := c.Locate(check)
	want := strings.Join([]string{
		path + ":3:15: writer.batch_rows: must be below 100",
		path + ":8:5: items[b].tags: missing",
		path + ":7:15: items[0].tags[1]: unknown tag",
		path + ":2:1: writer.fsync: needs batch_rows above 1000",
		"T_RATIO: ratio: 2 is above 1",
		"--limit: limit: 9 is odd",
		path + ":1:6: dsn: a DSN without a host",
		path + ": something without a key",
		path + ": already located",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("Locate:\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, check) {
		t.Error("the located error does not wrap the check's")
	}
	if !errors.Is(err, cliconf.ErrConfig) {
		t.Error("the located error does not match ErrConfig")
	}
	if c.Locate(nil) != nil {
		t.Error("Locate(nil) is not nil")
	}
}
