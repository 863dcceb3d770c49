package main

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/scenarios"
)

// defaultFilesNote is what a command's -h says of its default files.
const defaultFilesNote = "Default files (scenarios/...) are read from the working directory when it holds them, else from the copy built into lhcnp."

// builtinFS serves the scenarios/ files built into lhcnp
// (scenarios.Files) under the paths the defaults name, relative to the
// repository's root ("scenarios/compare/mid-wan.yaml").
type builtinFS struct{}

func (builtinFS) Open(name string) (fs.File, error) {
	rest, ok := strings.CutPrefix(name, "scenarios/")
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := scenarios.Files.Open(rest)
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		pe.Path = name // the path the command names, not the copy's
	}
	return f, err
}

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
