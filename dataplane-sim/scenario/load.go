package scenario

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lhcnp/lhcnp/internal/yamlsyntax"
)

// Option changes how a scenario is loaded.
type Option func(*options)

type options struct {
	seed    int64
	hasSeed bool
	fsys    fs.FS // nil: the operating system's files
}

// MaxSeed is the largest seed a scenario takes (its seed, a generated
// block's, ECMP's); seeds are never negative.
const MaxSeed = 1 << 62

// WithSeed replaces the file's seed before anything is drawn from it, so
// that generated traffic changes with it too (a block's own seed still
// wins).
func WithSeed(seed int64) Option {
	return func(o *options) { o.seed, o.hasSeed = seed, true }
}

// WithFS reads the scenario file and the CDF files it names from fsys
// (its paths slash-separated, as fs.FS wants) instead of the operating
// system's files: lhcnp's default scenarios built into the binary.
func WithFS(fsys fs.FS) Option {
	return func(o *options) { o.fsys = fsys }
}

// readFile reads path from o's file system.
func (o options) readFile(path string) ([]byte, error) {
	if o.fsys != nil {
		return fs.ReadFile(o.fsys, path)
	}
	return os.ReadFile(path)
}

// LoadFile reads and validates the scenario at path. CDF files named in
// the scenario are read relative to the scenario's directory (in
// WithFS's file system when given).
func LoadFile(path string, opts ...Option) (*Scenario, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	data, err := o.readFile(path)
	if err != nil {
		// The file leads the message: the reason is the system's alone,
		// not "read FILE: is a directory" after the file again.
		reason := err.Error()
		if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
			reason = pe.Err.Error()
		}
		return nil, &Error{File: path, Reason: reason, Err: err}
	}
	return Parse(path, data, opts...)
}

// Parse validates the scenario in data. file names it in errors and is the
// base for relative CDF file paths. The error, when not nil, is an
// ErrorList of every mistake found.
func Parse(file string, data []byte, opts ...Option) (*Scenario, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrorList{{File: file, Reason: "empty scenario"}}
		}
		return nil, ErrorList{yamlSyntaxError(file, data, err)}
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, ErrorList{{File: file, Reason: "empty scenario"}}
		}
		root = resolve(root.Content[0])
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, ErrorList{{File: file, Line: extra.Line, Col: extra.Column, Reason: "more than one yaml document; a scenario is one document"}}
	}
	l := &loader{
		d:         &decoder{file: file},
		dir:       filepath.Dir(file),
		sc:        &Scenario{File: file},
		nodes:     map[string]nodeInfo{},
		links:     map[string]int{},
		pairs:     map[[2]string]int{},
		fabricIdx: map[string]int{},
		flowSet:   map[string]*yaml.Node{},
		opts:      o,
	}
	l.load(root)
	if len(l.d.errs) > 0 {
		return nil, l.d.sorted()
	}
	return l.sc, nil
}

// yamlSyntaxError turns yaml.v3's "yaml: line N: reason" into an Error
// at the line (and column) to edit (yamlsyntax.Locate).
func yamlSyntaxError(file string, data []byte, err error) *Error {
	line, col, reason := yamlsyntax.Locate(data, err.Error())
	return &Error{File: file, Line: line, Col: col, Reason: reason, Err: err}
}

type nodeKind int

const (
	kindHost nodeKind = iota + 1
	kindSwitch
)

type nodeInfo struct {
	kind  nodeKind
	index int
	n     *yaml.Node
}

type loader struct {
	opts options
	d    *decoder
	dir  string
	sc   *Scenario

	nodes    map[string]nodeInfo
	links    map[string]int    // link name -> index in sc.Links
	pairs    map[[2]string]int // sorted endpoint pair -> index in sc.Links
	hostLnk  map[string][]int  // host -> links
	explicit []Route           // explicit routes in file order
	g        *graph            // the links by node id, for the routes (routes.go)
	// Generated fabrics: index in sc.Fabrics by name, their definitions,
	// and how many links the file wrote (the generated ones follow).
	fabricIdx  map[string]int
	fabricDefs []*fabricDef
	// lostFabrics are the fabrics that could not be built, lostLinks the
	// wan links to them: see lost.
	lostFabrics   []lostFabric
	lostLinks     map[string]bool
	fileLinks     int
	fileLinksDone bool
	wanWritten    int // items of topology.wan, refused ones included
	flowSet       map[string]*yaml.Node
	linkPos       []qpRef         // per link: its delay (or the link), where a cut is reported
	cut           map[string]bool // links between partitions, by name
	flowPos       []qpRef         // per flow in sc.Flows before sorting: where to report it
	qpPos         []qpRef         // explicit queue pair numbers, in flow order
}

// qpRef is a place in the file and its field path.
type qpRef struct {
	n     *yaml.Node
	field string
}

var topKeys = []string{
	"name", "description", "seed", "duration", "sample_interval",
	"topology", "queue", "mechanism", "dcqcn", "nic", "traffic", "events", "tuner",
}

func (l *loader) load(root *yaml.Node) {
	d, sc := l.d, l.sc
	top := d.object(root, "", topKeys...)
	if top == nil {
		return
	}
	sc.Name = strings.TrimSuffix(filepath.Base(sc.File), filepath.Ext(sc.File))
	if n := top.get("name"); n != nil {
		if v, ok := d.name(n, "name"); ok {
			if strings.ContainsAny(v, `/\`) || v == "." || v == ".." {
				// sim compare and phases write a scenario's runs and
				// plots under its name, inside their --out.
				d.errAt(n, "name", "%q: a scenario's name names its output files and directories: want one without slashes, not . or ..", v)
			} else {
				sc.Name = v
			}
		}
	}
	if n := top.get("description"); n != nil {
		sc.Description, _ = d.scalar(n, "description")
	}
	sc.Seed = 1
	if n := top.get("seed"); n != nil {
		if v, ok := d.integer(n, "seed", 0, MaxSeed); ok {
			sc.Seed = v
		}
	}
	if l.opts.hasSeed {
		sc.Seed = l.opts.seed
	}
	if v, ok := d.positiveDuration(top.must("duration"), "duration"); ok {
		sc.Duration = v
	}
	if n := top.must("sample_interval"); n != nil {
		if v, ok := d.positiveDuration(n, "sample_interval"); ok {
			if sc.Duration > 0 && v > sc.Duration {
				d.errAt(n, "sample_interval", "%v is longer than the duration %v", v, sc.Duration)
			}
			sc.SampleInterval = v
		}
	}

	defQueue := DefaultQueue()
	l.queue(top.get("queue"), "queue", &defQueue)
	l.topology(top.must("topology"), defQueue)
	l.mechanism(top.get("mechanism"))
	l.dcqcn(top.get("dcqcn"))
	l.nic(top.get("nic"))
	l.traffic(top.get("traffic"))
	l.events(top.get("events"))
	l.tuner(top.get("tuner"))
	if len(d.errs) == 0 {
		l.finish()
	}
}
