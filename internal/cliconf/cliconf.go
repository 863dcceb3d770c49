// Package cliconf layers a command's configuration: defaults < YAML file <
// environment variables < command-line flags, onto one Go struct.
//
// The struct's `yaml` tags name the keys (snake_case, nested structs give
// dotted keys such as writer.batch_rows). Every scalar key (string, bool,
// integers, floats, time.Duration) is also
//
//   - a flag: the key with "_" turned into "-", dots kept
//     (--writer.batch-rows), registered on the caller's stdlib flag.FlagSet;
//   - an environment variable: the prefix, then the key upper-cased with "."
//     and "-" turned into "_" (LHCNP_COLLECTOR_WRITER_BATCH_ROWS).
//
// Lists and maps (a collector's targets) are file-only: they have no
// sensible one-line form. The struct's values when Register is called are
// the defaults.
//
// The file is decoded strictly first (gopkg.in/yaml.v3 with KnownFields) so
// an unknown or mistyped key is an error naming the file and line; an
// unknown variable under the prefix is an error naming the variable.
//
// The layering is github.com/knadh/koanf/v2 with its rawbytes, yaml, env
// and basicflag providers, chosen over viper because koanf takes a stdlib
// flag.FlagSet as it is (viper wants pflag), keeps no global state (viper's
// package-level instance and AutomaticEnv would leak between subcommands and
// tests), and pulls in one small module per provider.
//
// The package knows no command: it must not depend on collector/, server/
// or cmd/.
package cliconf

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	kyaml "github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/basicflag"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	"gopkg.in/yaml.v3"
)

// Config binds one struct to a flag set, an environment prefix and a file.
type Config struct {
	dst     any
	fs      *flag.FlagSet
	prefix  string
	environ func() []string
	// keys by flag name and by environment variable name.
	flagKey map[string]string
	envKey  map[string]string
	keys    []string
}

type options struct {
	prefix  string
	environ func() []string
}

// Option configures Register.
type Option func(*options)

// WithEnvPrefix sets the environment prefix, e.g. "LHCNP_COLLECTOR_". Without
// it the environment is not read.
func WithEnvPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithEnviron replaces os.Environ (tests).
func WithEnviron(fn func() []string) Option { return func(o *options) { o.environ = fn } }

// Register adds a flag for every scalar key of *dst to fs, with the value
// in *dst as its default. dst must be a pointer to a struct.
func Register(fs *flag.FlagSet, dst any, opts ...Option) (*Config, error) {
	o := options{environ: os.Environ}
	for _, opt := range opts {
		opt(&o)
	}
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("cliconf: want a pointer to a struct, got %T", dst)
	}
	c := &Config{dst: dst, fs: fs, prefix: o.prefix, environ: o.environ,
		flagKey: map[string]string{}, envKey: map[string]string{}}
	if err := c.walk(v.Elem(), ""); err != nil {
		return nil, err
	}
	return c, nil
}

// Keys returns the scalar keys (those with a flag and a variable), sorted.
func (c *Config) Keys() []string {
	out := append([]string(nil), c.keys...)
	sort.Strings(out)
	return out
}

// EnvName returns the environment variable of a key.
func (c *Config) EnvName(key string) string {
	return c.prefix + strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(key))
}

// FlagName returns the flag of a key.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

var durationType = reflect.TypeFor[time.Duration]()

func yamlName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" || !f.IsExported() {
		return "", false
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, true
}

func (c *Config) walk(v reflect.Value, prefix string) error {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, ok := yamlName(sf)
		if !ok {
			continue
		}
		key := prefix + name
		fv := v.Field(i)
		if sf.Type.Kind() == reflect.Struct && sf.Type != durationType {
			if err := c.walk(fv, key+"."); err != nil {
				return err
			}
			continue
		}
		usage := sf.Tag.Get("help")
		fname := FlagName(key)
		switch {
		case sf.Type == durationType:
			c.fs.Duration(fname, time.Duration(fv.Int()), usage)
		case sf.Type.Kind() == reflect.String:
			c.fs.String(fname, fv.String(), usage)
		case sf.Type.Kind() == reflect.Bool:
			c.fs.Bool(fname, fv.Bool(), usage)
		case fv.CanInt():
			c.fs.Int64(fname, fv.Int(), usage)
		case fv.CanUint():
			c.fs.Uint64(fname, fv.Uint(), usage)
		case fv.CanFloat():
			c.fs.Float64(fname, fv.Float(), usage)
		default:
			continue // lists and maps: file only
		}
		env := c.EnvName(key)
		if other, dup := c.envKey[env]; dup {
			return fmt.Errorf("cliconf: keys %s and %s share the variable %s", other, key, env)
		}
		c.flagKey[fname] = key
		c.envKey[env] = key
		c.keys = append(c.keys, key)
	}
	return nil
}

// Load layers the file (none when path is ""), the environment and the flags
// set on the command line (fs must have been parsed) onto the struct.
func (c *Config) Load(path string) error {
	k := koanf.New(".")
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := checkStrict(path, data, reflect.TypeOf(c.dst).Elem()); err != nil {
			return err
		}
		if err := k.Load(rawbytes.Provider(data), kyaml.Parser()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if c.prefix != "" {
		var unknown []string
		err := k.Load(env.Provider(".", env.Opt{
			Prefix:      c.prefix,
			EnvironFunc: c.environ,
			TransformFunc: func(name, val string) (string, any) {
				key, ok := c.envKey[name]
				if !ok {
					unknown = append(unknown, name)
					return "", nil
				}
				return key, val
			},
		}), nil)
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return fmt.Errorf("environment: unknown variable %s (known: %s...)", unknown[0], c.prefix)
		}
	}
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	err := k.Load(basicflag.ProviderWithValue(c.fs, ".", func(name, val string) (string, any) {
		key, ok := c.flagKey[name]
		if !ok || !set[name] {
			return "", nil
		}
		return key, val
	}), nil)
	if err != nil {
		return err
	}
	if err := k.UnmarshalWithConf("", c.dst, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return fmt.Errorf("%s: %w", sourceName(path), err)
	}
	return nil
}

func sourceName(path string) string {
	if path == "" {
		return "configuration"
	}
	return path
}

// yamlLine matches the "line N: " of a yaml.v3 error.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// notFound matches yaml.v3's unknown-field message.
var notFound = regexp.MustCompile(`^field (\S+) not found in type \S+$`)

// checkStrict decodes data into a fresh value of type t with unknown
// fields refused, and turns yaml.v3's messages into "FILE:LINE: ..." lines.
func checkStrict(path string, data []byte, t reflect.Type) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(reflect.New(t).Interface())
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = lineMessage(path, m)
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return errors.New(lineMessage(path, err.Error()))
}

func lineMessage(path, m string) string {
	g := yamlLine.FindStringSubmatch(m)
	if g == nil {
		return path + ": " + strings.TrimPrefix(m, "yaml: ")
	}
	msg := g[2]
	if f := notFound.FindStringSubmatch(msg); f != nil {
		msg = "unknown key " + f[1]
	}
	return path + ":" + g[1] + ": " + msg
}
