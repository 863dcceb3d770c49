// Package cliconf layers a command's configuration: defaults < YAML file <
// environment variables < command-line flags, onto one Go struct.
//
// The struct's `yaml` tags name the keys (snake_case, nested structs give
// dotted keys such as writer.batch_rows). Every scalar key (string, bool,
// integers, floats, time.Duration) is also
//
//   - a flag: the key with "_" turned into "-", dots kept
//     (--writer.batch-rows), registered on the caller's stdlib flag.FlagSet,
//     its usage the key's `help` tag (give one: -h lists a key without it
//     with nothing to say what it is);
//   - an environment variable: the prefix, then the key upper-cased with "."
//     and "-" turned into "_" (LHCNP_COLLECTOR_WRITER_BATCH_ROWS).
//
// A variable set to the empty string (LHCNP_TUNER_DB=) is as if it were
// not set: it overrides neither the file nor the default, and names no
// key (an unknown one is not refused). A compose file, a systemd unit or
// a wrapper script passes VAR= for a value it does not have (compose's
// ${VAR} of an unset VAR), and that must not blank the file's value;
// viper, under gnmic, does the same. A key is blanked by the file or a
// flag (--tls-cert=). koanf's env provider alone would set "".
//
// This is the one rule for names across lhcnp's commands: key, flag and
// variable are the same words, and a command's prefix is LHCNP_ and its
// name (LHCNP_COLLECTOR_, LHCNP_TUNER_, LHCNP_LAB_, LHCNP_SWITCH_,
// LHCNP_MIGRATE_). Two exceptions exist, both visible in the struct or the
// Register call:
//
//   - a `flag:"name"` tag renames a key's flag when the command already has
//     a flag of that name (the switch file's config key is --initial-config,
//     --config being the file itself; its run key is --switches, switches
//     being the file's list); Register refuses a taken flag name;
//   - WithFlagAlias and WithEnvAlias keep an older flag or variable working
//     for a key (migrate's --db and LHCNP_DB for db.dsn). An alias flag is
//     the flag's layer (setting both is an error); an alias variable lies
//     under the key's own variable.
//
// Lists and maps (a collector's targets) are file-only: they have no
// sensible one-line form. The struct's values when Register is called are
// the defaults. After Load, Origin tells which layer gave a key its value.
//
// The file is decoded strictly first (go.yaml.in/yaml/v3, the library of
// koanf's yaml parser, with KnownFields) so an unknown or mistyped key is an
// error naming the file, line, column and full key (switches[0].listn); an
// unknown variable under the prefix is an error naming the variable.
//
// The layering is github.com/knadh/koanf/v2 with its rawbytes, yaml, env
// and basicflag providers, chosen over viper because koanf takes a stdlib
// flag.FlagSet as it is (viper wants pflag), keeps no global state (viper's
// package-level instance and AutomaticEnv would leak between subcommands and
// tests), and pulls in one small module per provider.
//
// Every error of ParseInterspersed, Load and Locate matches ErrConfig
// (errors.Is): the configuration is wrong, which a command tells apart from
// a failure of its work (lhcnp: exit status 2, not 1).
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
	"strconv"
	"strings"
	"time"

	kyaml "github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/basicflag"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	"go.yaml.in/yaml/v3"

	"github.com/lhcnp/lhcnp/internal/yamlsyntax"
)

// ErrConfig is matched by every error of ParseInterspersed (but
// flag.ErrHelp), Load and Locate: a flag, a variable or the file is not of
// its key's type or names no key, or a command's check refused a value. A
// command's other errors are failures of its work; a user scripting it
// tells the two apart (lhcnp's exit status 2 and 1). The errors' messages
// are their own: ErrConfig's is never printed.
var ErrConfig = errors.New("bad configuration")

// configError is an error of the configuration: it says err's message and
// matches ErrConfig.
type configError struct{ err error }

func (e *configError) Error() string        { return e.err.Error() }
func (e *configError) Unwrap() error        { return e.err }
func (e *configError) Is(target error) bool { return target == ErrConfig }

// badConfig marks err (nil: nil) as an error of the configuration.
func badConfig(err error) error {
	if err == nil {
		return nil
	}
	return &configError{err}
}

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
	// flagOf is each key's flag; envAlias the alias variables (name → key).
	flagOf   map[string]string
	envAlias map[string]string
	fields   map[string]field
	// origin and inFile are filled by Load, and path and places: the
	// file and the place of every key it sets (Locate).
	origin map[string]string
	inFile map[string]bool
	path   string
	places map[string]place
}

// place is where a key's value starts in a file: its line and column,
// 1-based.
type place struct{ line, col int }

type options struct {
	prefix     string
	environ    func() []string
	flagAlias  [][2]string // name, key
	envAliases [][2]string // name, key
}

// Option configures Register.
type Option func(*options)

// WithEnvPrefix sets the environment prefix, e.g. "LHCNP_COLLECTOR_". Without
// it the environment is not read.
func WithEnvPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithEnviron replaces os.Environ (tests).
func WithEnviron(fn func() []string) Option { return func(o *options) { o.environ = fn } }

// WithFlagAlias registers a second flag, name, for a scalar key (an older
// spelling that must keep working). Giving both flags is an error.
func WithFlagAlias(name, key string) Option {
	return func(o *options) { o.flagAlias = append(o.flagAlias, [2]string{name, key}) }
}

// WithEnvAlias reads the variable name (any name, outside the prefix too)
// for a scalar key, under the key's own variable: the older name keeps
// working, the prefixed one wins when both are set.
func WithEnvAlias(name, key string) Option {
	return func(o *options) { o.envAliases = append(o.envAliases, [2]string{name, key}) }
}

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
		flagKey: map[string]string{}, envKey: map[string]string{},
		flagOf: map[string]string{}, envAlias: map[string]string{}, fields: map[string]field{}}
	if err := c.walk(v.Elem(), ""); err != nil {
		return nil, err
	}
	for _, a := range o.flagAlias {
		name, key := a[0], a[1]
		f, ok := c.fields[key]
		if !ok {
			return nil, fmt.Errorf("cliconf: flag alias --%s: no scalar key %s", name, key)
		}
		if err := c.define(name, f.v, "alias of --"+c.flagOf[key], f.typ); err != nil {
			return nil, err
		}
		c.flagKey[name] = key
	}
	for _, a := range o.envAliases {
		if _, ok := c.fields[a[1]]; !ok {
			return nil, fmt.Errorf("cliconf: variable alias %s: no scalar key %s", a[0], a[1])
		}
		c.envAlias[a[0]] = a[1]
	}
	return c, nil
}

// field is a scalar key's value in the struct and its type.
type field struct {
	v   reflect.Value
	typ reflect.Type
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

// FlagName returns the flag of a key by the rule ("_" turned into "-");
// Flag gives the flag a Config registered, which a `flag` tag may rename.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// Flag returns the flag registered for a key (without the dashes).
func (c *Config) Flag(key string) string { return c.flagOf[key] }

// Origin names the layer that gave a key its value in the last Load: ""
// (the default), the file's path, the variable (LHCNP_SWITCH_SPEED) or the
// flag (--speed). Messages about a value use it to say where it came from.
func (c *Config) Origin(key string) string { return c.origin[key] }

// InFile reports whether the file of the last Load sets the key, whatever
// a variable or flag made of it.
func (c *Config) InFile(key string) bool { return c.inFile[key] }

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
		if !scalar(sf.Type) {
			continue // lists and maps: file only
		}
		fname := FlagName(key)
		if t := sf.Tag.Get("flag"); t != "" {
			fname = t
		}
		if err := c.define(fname, fv, sf.Tag.Get("help"), sf.Type); err != nil {
			return fmt.Errorf("%w (key %s)", err, key)
		}
		env := c.EnvName(key)
		if other, dup := c.envKey[env]; dup {
			return fmt.Errorf("cliconf: keys %s and %s share the variable %s", other, key, env)
		}
		c.flagKey[fname] = key
		c.flagOf[key] = fname
		c.envKey[env] = key
		c.fields[key] = field{v: fv, typ: sf.Type}
		c.keys = append(c.keys, key)
	}
	return nil
}

func scalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// define registers the flag name of a scalar field, its value the default.
// A name the flag set already has is an error, not flag's panic. The flag
// is of the flag package's type of the field's own (an int key's an Int,
// not an Int64), so that a bad value of the flag names the type a
// variable's names (flagError, checkValues): `not of type int` for both.
func (c *Config) define(name string, fv reflect.Value, usage string, t reflect.Type) error {
	if c.fs.Lookup(name) != nil {
		return fmt.Errorf("cliconf: flag --%s is already defined", name)
	}
	switch {
	case t == durationType:
		c.fs.Duration(name, time.Duration(fv.Int()), usage)
	case t.Kind() == reflect.String:
		c.fs.String(name, fv.String(), usage)
	case t.Kind() == reflect.Bool:
		c.fs.Bool(name, fv.Bool(), usage)
	case t.Kind() == reflect.Int:
		c.fs.Int(name, int(fv.Int()), usage)
	case t.Kind() == reflect.Uint:
		c.fs.Uint(name, uint(fv.Uint()), usage)
	case fv.CanInt():
		c.fs.Int64(name, fv.Int(), usage)
	case fv.CanUint():
		c.fs.Uint64(name, fv.Uint(), usage)
	default:
		c.fs.Float64(name, fv.Float(), usage)
	}
	return nil
}

// Load layers the file (none when path is ""), the environment and the flags
// set on the command line (fs must have been parsed) onto the struct. Its
// errors, a file that cannot be read too, match ErrConfig.
func (c *Config) Load(path string) error { return badConfig(c.load(path)) }

func (c *Config) load(path string) error {
	k := koanf.New(".")
	c.origin, c.inFile, c.path, c.places = map[string]string{}, map[string]bool{}, path, map[string]place{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := checkStrict(path, data, reflect.TypeOf(c.dst).Elem()); err != nil {
			return err
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
			keyPlaces(doc.Content[0], "", c.places)
		}
		if err := k.Load(rawbytes.Provider(data), kyaml.Parser()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, key := range c.keys {
			if k.Exists(key) {
				c.origin[key], c.inFile[key] = path, true
			}
		}
	}
	aliases := make([]string, 0, len(c.envAlias))
	for name := range c.envAlias {
		aliases = append(aliases, name)
	}
	sort.Strings(aliases)
	for _, name := range aliases {
		for _, kv := range c.environ() {
			if n, val, ok := strings.Cut(kv, "="); ok && n == name && val != "" {
				key := c.envAlias[name]
				if err := k.Set(key, val); err != nil {
					return fmt.Errorf("environment: %s: %w", name, err)
				}
				c.origin[key] = name
			}
		}
	}
	if c.prefix != "" {
		var unknown []string
		err := k.Load(env.Provider(".", env.Opt{
			Prefix:      c.prefix,
			EnvironFunc: c.environ,
			TransformFunc: func(name, val string) (string, any) {
				if val == "" {
					return "", nil // as if unset (the package comment)
				}
				key, ok := c.envKey[name]
				if !ok {
					unknown = append(unknown, name)
					return "", nil
				}
				c.origin[key] = name
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
	byKey := map[string]string{} // key → the flag that set it
	var both error
	c.fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		key, ok := c.flagKey[f.Name]
		if !ok {
			return
		}
		if other, dup := byKey[key]; dup && both == nil {
			both = fmt.Errorf("flags --%s and --%s both set %s: give one", other, f.Name, key)
		}
		byKey[key] = f.Name
		c.origin[key] = "--" + f.Name
	})
	if both != nil {
		return both
	}
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
	if err := c.checkValues(k, path); err != nil {
		return err
	}
	if err := k.UnmarshalWithConf("", c.dst, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return fmt.Errorf("%s: %w", sourceName(path), err)
	}
	return nil
}

// keyPlaces records the place of every key under n, a mapping or a
// sequence, at prefix: dotted keys (writer.batch_rows), and a sequence's
// items by index (targets[0]) and, for a mapping with a name key, by name
// (targets[n1]), as the commands' checks name them. A scalar's place is
// its value's, where a value of the wrong type is named (typeErrors); a
// list's or a mapping's is its key's, the line that introduces it.
func keyPlaces(n *yaml.Node, prefix string, places map[string]place) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + key
			}
			places[key] = place{k.Line, k.Column}
			if v.Kind == yaml.ScalarNode {
				places[key] = place{v.Line, v.Column}
			}
			keyPlaces(v, key, places)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			at := fmt.Sprintf("%s[%d]", prefix, i)
			places[at] = place{item.Line, item.Column}
			keyPlaces(item, at, places)
			if item.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(item.Content); j += 2 {
				if item.Content[j].Value == "name" && item.Content[j+1].Kind == yaml.ScalarNode {
					named := prefix + "[" + item.Content[j+1].Value + "]"
					places[named] = place{item.Line, item.Column}
					keyPlaces(item, named, places)
				}
			}
		}
	}
}

// errKey matches the key an error of a command's check starts with
// ("writer.batch_rows: must be positive", "targets[n1].subscriptions[0].paths: ...").
var errKey = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*(?:\[[^\]]*\])*(?:\.[A-Za-z_][A-Za-z0-9_-]*(?:\[[^\]]*\])*)*): `)

// Locate says where each line of err (a command's check of the loaded
// configuration, each line starting with the key it is about) came from:
// "FILE:LINE:COL: " when the file of the last Load set the key (or, for a
// key it does not set, the nearest enclosing one it does; keyPlaces), as
// the file's type errors and the scenario loader's are, the variable or
// flag that set it otherwise, "FILE: " for a key left at its default when
// a file was read. A line already naming the file is left as it is. The
// error matches ErrConfig: a check's refusal is the configuration's.
func (c *Config) Locate(err error) error {
	if err == nil {
		return nil
	}
	msgs := strings.Split(err.Error(), "\n")
	for i, m := range msgs {
		msgs[i] = c.locate(m)
	}
	return &locatedError{msg: strings.Join(msgs, "\n"), err: err}
}

func (c *Config) locate(m string) string {
	if c.path != "" && strings.HasPrefix(m, c.path) {
		return m
	}
	g := errKey.FindStringSubmatch(m)
	if g == nil {
		if c.path != "" {
			return c.path + ": " + m
		}
		return m
	}
	key := g[1]
	if o := c.origin[key]; o != "" && o != c.path {
		return o + ": " + m
	}
	for k := key; k != ""; k = parentKey(k) {
		if p, ok := c.places[k]; ok {
			return fmt.Sprintf("%s:%d:%d: %s", c.path, p.line, p.col, m)
		}
	}
	if c.path != "" {
		return c.path + ": " + m
	}
	return m
}

// parentKey is key without its last component (a.b[2].c → a.b[2] → a.b
// → a), "" at the top.
func parentKey(key string) string {
	if strings.HasSuffix(key, "]") {
		if i := strings.LastIndex(key, "["); i > 0 {
			return key[:i]
		}
	}
	if i := strings.LastIndex(key, "."); i > 0 {
		return key[:i]
	}
	return ""
}

// locatedError is an error with its lines located; errors.Is and As see
// the check's error.
type locatedError struct {
	msg string
	err error
}

func (e *locatedError) Error() string { return e.msg }
func (e *locatedError) Unwrap() error { return e.err }

func (e *locatedError) Is(target error) bool { return target == ErrConfig }

// checkValues decodes every scalar key alone, so that a value that is not
// of its key's type is an error naming where it came from (a variable: the
// file was checked by type already, flags by the flag package).
func (c *Config) checkValues(k *koanf.Koanf, path string) error {
	for _, key := range c.keys {
		if !k.Exists(key) || c.origin[key] == path {
			continue
		}
		f := c.fields[key]
		if err := k.UnmarshalWithConf(key, reflect.New(f.typ).Interface(), koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
			v := fmt.Sprint(k.Get(key))
			return fmt.Errorf("%s=%q: %s", c.origin[key], v, notOfType(f.typ, v))
		}
	}
	return nil
}

// notOfType says why v is not a value of type t, as the flag package's
// errors are said for a flag (flagError): a number too large for t is "out
// of the range of type t", anything else "not of type t".
func notOfType(t reflect.Type, v string) string {
	var err error
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(v, 0, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err = strconv.ParseUint(v, 0, t.Bits())
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(v, t.Bits())
	}
	if t != durationType && errors.Is(err, strconv.ErrRange) {
		return "out of the range of type " + t.String()
	}
	return "not of type " + t.String()
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
var notFound = regexp.MustCompile(`^field (\S+) not found in type .+$`)

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
		var doc yaml.Node
		places := map[string]place{}
		if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
			keyPlaces(doc.Content[0], "", places)
			if msgs := typeErrors(path, doc.Content[0], t, ""); len(msgs) > 0 {
				return errors.New(strings.Join(msgs, "; "))
			}
		}
		// The walk found nothing yaml.v3 did: its own lines, the key
		// named where one alone sits on the line.
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = lineMessage(path, m, places)
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	// A syntax error: yaml.v3's line is not always the one to edit.
	line, col, reason := yamlsyntax.Locate(data, err.Error())
	if line == 0 {
		return errors.New(path + ": " + reason)
	}
	return fmt.Errorf("%s:%d:%d: %s", path, line, col, reason)
}

// lineMessage is one message of a yaml.TypeError as "FILE:LINE: ...", the
// key named when one key alone sits on the line of a scalar of the wrong
// type (yaml.v3 names the line and the Go type, not the key).
func lineMessage(path, m string, places map[string]place) string {
	g := yamlLine.FindStringSubmatch(m)
	if g == nil {
		return path + ": " + strings.TrimPrefix(m, "yaml: ")
	}
	msg := g[2]
	if f := notFound.FindStringSubmatch(msg); f != nil {
		msg = "unknown key " + f[1]
	} else if key := keyAt(places, g[1]); key != "" && strings.Contains(msg, "`") {
		// A scalar's message (its value in backquotes): the key is on
		// its line. A list or a mapping starts below its key.
		msg = key + ": " + msg
	}
	return path + ":" + g[1] + ": " + msg
}

// keyAt returns the one key of places whose line is line, or "" when none
// or several are (a flow mapping on one line); a list item's index key
// (targets[0]) gives way to the keys under it.
func keyAt(places map[string]place, line string) string {
	n, err := strconv.Atoi(line)
	if err != nil {
		return ""
	}
	var found []string
	for k, p := range places {
		if p.line == n && !strings.HasSuffix(k, "]") {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// typeErrors walks n, the value of the key at path, against t, the Go
// type it decodes into, as yaml.v3's strict decoder does, and returns
// its mistakes as "FILE:LINE:COL: ..." lines naming the full key:
// yaml.v3 names an unknown key by its last segment (listn, not
// switches[0].listn), and a value of the wrong type by its line and Go
// type alone, which says nothing when the value is a list or a mapping
// (its line is its key's or the one below) or shares its line with other
// keys (flow style).
func typeErrors(path string, n *yaml.Node, t reflect.Type, at string) []string {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Tag == "!!null" || t.Kind() == reflect.Interface {
		return nil // yaml.v3 leaves the zero value; anything goes in an interface
	}
	where := fmt.Sprintf("%s:%d:%d: ", path, n.Line, n.Column)
	named := func(msg string) string {
		if at == "" {
			return where + msg
		}
		return where + at + ": " + msg
	}
	// A mismatch of kinds, a scalar's value, or a type that decodes
	// itself: yaml.v3's message for this node alone, without its line.
	whole := func() []string {
		err := n.Decode(reflect.New(t).Interface())
		var te *yaml.TypeError
		if err == nil {
			return nil
		}
		if !errors.As(err, &te) {
			return []string{named(err.Error())}
		}
		var out []string
		for _, m := range te.Errors {
			if g := yamlLine.FindStringSubmatch(m); g != nil {
				m = g[2]
			}
			out = append(out, named(m))
		}
		return out
	}
	sub := func(key string) string {
		if at == "" {
			return key
		}
		return at + "." + key
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return whole()
	}
	if want := containerKind(t); want != "" && want != yamlsyntax.KindName(n) {
		// yaml.v3 would name the Go type (cliconf_test.writer); a
		// scalar is named in backquotes, as yaml.v3 names values.
		got := yamlsyntax.KindName(n)
		if n.Kind == yaml.ScalarNode {
			got = "`" + n.Value + "`"
		}
		return []string{named(fmt.Sprintf("%s, want %s", got, want))}
	}
	switch {
	case t.Kind() == reflect.Struct && t != durationType && n.Kind == yaml.MappingNode:
		var out []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" { // <<: *base, merged into this mapping
				if v.Kind == yaml.SequenceNode {
					for _, m := range v.Content {
						out = append(out, typeErrors(path, m, t, at)...)
					}
				} else {
					out = append(out, typeErrors(path, v, t, at)...)
				}
				continue
			}
			f, ok := fieldOf(t, k.Value)
			if !ok {
				out = append(out, fmt.Sprintf("%s:%d:%d: unknown key %s", path, k.Line, k.Column, sub(k.Value)))
				continue
			}
			out = append(out, typeErrors(path, v, f.Type, sub(k.Value))...)
		}
		return out
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		var out []string
		for i, item := range n.Content {
			out = append(out, typeErrors(path, item, t.Elem(), fmt.Sprintf("%s[%d]", at, i))...)
		}
		return out
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		var out []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				out = append(out, typeErrors(path, v, t, at)...)
				continue
			}
			kt := t.Key()
			if err := k.Decode(reflect.New(kt).Interface()); err != nil {
				out = append(out, typeErrors(path, k, kt, sub(k.Value))...)
				continue
			}
			out = append(out, typeErrors(path, v, t.Elem(), sub(k.Value))...)
		}
		return out
	}
	return whole()
}

// fieldOf returns the field of struct t that the YAML key name sets.
func fieldOf(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if n, ok := yamlName(sf); ok && n == name {
			return sf, true
		}
	}
	return reflect.StructField{}, false
}

// containerKind is what YAML gives a list or a struct or map type: "a
// list", "a mapping", "" for others.
func containerKind(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "a list"
	case t.Kind() == reflect.Map || (t.Kind() == reflect.Struct && t != durationType):
		return "a mapping"
	}
	return ""
}
