package main

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/refsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/scenarios"
)

// defaultFilesNote is what a command's -h says of its default files: the
// scenarios', and the stored reference runs' where fs has --validation
// (sim compare alone; fs's flags registered before).
func defaultFilesNote(fs *flag.FlagSet) string {
	files := "scenarios/..."
	if fs.Lookup("validation") != nil {
		files += ", --validation's " + strings.TrimSuffix(refsimDir, "/") + "/testdata/ref"
	}
	return "Default files (" + files + ") are read from the working directory when it holds them, else from the copy built into lhcnp."
}

// builtinFS serves the files built into lhcnp under the paths the
// defaults name, relative to the repository's root: scenarios/
// (scenarios.Files, "scenarios/compare/mid-wan.yaml") and the stored
// reference runs of --validation (refsim.StoredFiles,
// "dataplane-sim/refsim/testdata/ref/incast-2-pfc/run1.json").
type builtinFS struct{}

func (builtinFS) Open(name string) (fs.File, error) {
	var f fs.File
	var err error
	if rest, ok := strings.CutPrefix(name, "scenarios/"); ok {
		f, err = scenarios.Files.Open(rest)
	} else if rest, ok := strings.CutPrefix(name, refsimDir); ok {
		f, err = refsim.StoredFiles.Open(rest)
	} else {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		pe.Path = name // the path the command names, not the copy's
	}
	return f, err
}

// refsimDir is refsim's directory from the repository's root: the root
// of refsim.StoredFiles.
const refsimDir = "dataplane-sim/refsim/"

// fileSource is where a command reads the file at path from: nil for the
// operating system's files, or builtinFS when path is a default (not given
// on the command line) that the working directory does not hold and lhcnp
// does. A file in the working directory wins, so that one editing
// scenarios/ in the repository runs the edit.
func fileSource(path string, isDefault bool) fs.FS {
	if !isDefault {
		return nil
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := fs.Stat(builtinFS{}, path); err != nil {
		return nil // the operating system's error names the path
	}
	return builtinFS{}
}

// readSource reads path from fsys (nil: the operating system's files).
func readSource(fsys fs.FS, path string) ([]byte, error) {
	if fsys == nil {
		return os.ReadFile(path)
	}
	return fs.ReadFile(fsys, path)
}

// openSource opens path in fsys (nil: the operating system's files).
func openSource(fsys fs.FS, path string) (fs.File, error) {
	if fsys == nil {
		return os.Open(path)
	}
	return fsys.Open(path)
}

// loadDefaultScenario is loadScenario for a file that may be a default
// (fileSource).
func loadDefaultScenario(path string, isDefault bool) (*scenario.Scenario, error) {
	if src := fileSource(path, isDefault); src != nil {
		return loadScenario(path, scenario.WithFS(src))
	}
	return loadScenario(path)
}

// defaultFiles are the files a command reads that are its defaults, not
// its command line's: fileSource may read them from lhcnp's copy.
type defaultFiles map[string]bool

// add returns d with files added (d may be nil).
func (d defaultFiles) add(files ...string) defaultFiles {
	if d == nil {
		d = defaultFiles{}
	}
	for _, f := range files {
		d[f] = true
	}
	return d
}

// addFlags returns d with the files of fs's flags names (a value split
// at commas) that the command line did not give.
func (d defaultFiles) addFlags(fs *flag.FlagSet, names ...string) defaultFiles {
	given := givenFlags(fs)
	for _, n := range names {
		if !given[n] {
			d = d.add(splitList(fs.Lookup(n).Value.String())...)
		}
	}
	return d
}

// givenFlags returns the names of the flags fs's command line gave: the
// others hold their defaults.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}

// validationSources are the options of refsim's stored comparison that
// read --validation (refDir) and --validation-scenarios (scenarioDir)
// from lhcnp's copy when they are defaults the working directory does
// not hold (fileSource).
func validationSources(refDir, scenarioDir string, defaults defaultFiles) []refsim.StoredOption {
	var opts []refsim.StoredOption
	if src := fileSource(refDir, defaults[refDir]); src != nil {
		opts = append(opts, refsim.WithStoredFS(src))
	}
	if src := fileSource(scenarioDir, defaults[scenarioDir]); src != nil {
		opts = append(opts, refsim.WithScenarioFS(src))
	}
	return opts
}
