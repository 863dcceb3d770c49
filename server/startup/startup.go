// Package startup keeps one switch's startup configuration in a file: the
// configuration the switch was last committed with (JSON_IETF of its
// config tree, as gNMI Get CONFIG returns it), which it loads again when
// it starts, as a real switch boots from its saved configuration.
//
// A File is the service.Persister of a switch's gNMI handler. A write is
// atomic and durable: the new document goes to a temporary file in the
// same directory, is synced, renamed over the old one and the directory
// synced, so that after a crash at any instant the file holds either the
// old document or the new one, whole. It holds no policy of what to keep
// (gnmi/service decides: never a commit waiting for confirmation).
package startup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/internal/atomicfile"
	"github.com/lhcnp/lhcnp/internal/jsonpos"
	"github.com/lhcnp/lhcnp/internal/pidlock"
)

// File is a startup configuration file.
type File struct {
	path string
}

var _ service.Persister = (*File)(nil)

// FileName is the startup file of switch name in a state directory.
func FileName(dir, name string) string { return filepath.Join(dir, name+".json") }

// New returns the startup file at path (it need not exist yet).
func New(path string) *File { return &File{path: path} }

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// tempPrefix starts the name of a write in progress, beside the file.
func (f *File) tempPrefix() string { return atomicfile.TempPrefix(f.path) }

// Read returns the saved configuration; ok is false when there is none.
// Writes a crash interrupted (temporary files) are removed.
func (f *File) Read() (data []byte, ok bool, err error) {
	dir := filepath.Dir(f.path)
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), f.tempPrefix()) {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	data, err = os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// Persist replaces the file's content with config atomically and durably
// (service.Persister). ctx is not consulted: a write once begun is
// finished, it takes a few milliseconds.
func (f *File) Persist(_ context.Context, config []byte) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(f.path, 0o644, func(w io.Writer) error {
		_, err := w.Write(config)
		return err
	}, atomicfile.Durable())
}

// Remove deletes the file (a start from the initial configuration when
// there is none to save).
func (f *File) Remove() error {
	if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ErrInUse is returned (wrapped) by Lock when another process, or another
// fabric of this one, runs the switch with the same startup file.
var ErrInUse = errors.New("in use")

// Lock takes the file's lock (a pidlock on PATH.lock: two switches writing
// one file would each start from the other's configuration), creating its
// directory; a file locked by a running switch is refused with ErrInUse
// naming that process. Release the lock with its Release.
func (f *File) Lock() (*pidlock.Lock, error) {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return nil, err
	}
	l, err := pidlock.Acquire(f.path + ".lock")
	var held *pidlock.HeldError
	if errors.As(err, &held) {
		holder := "another switch"
		if held.PID != 0 {
			holder = fmt.Sprintf("the switch of pid %d", held.PID)
		}
		return nil, fmt.Errorf("startup configuration %s is %w by %s: stop it, or give this one another state directory (--state-dir)", f.path, ErrInUse, holder)
	}
	if err != nil {
		return nil, fmt.Errorf("startup configuration %s: lock: %w", f.path, err)
	}
	return l, nil
}

// Check returns the first syntax error of data, the configuration
// document of the file name, or its first member given twice in an
// object, as "name:LINE:COL: ...": the schema's decoder names neither line
// nor column, and takes the last of two members silently.
func Check(name string, data []byte) error {
	var e *jsonpos.Error
	if err := jsonpos.Check(data); errors.As(err, &e) {
		if e.Path == "" {
			return fmt.Errorf("%s:%v: malformed JSON: %s", name, e.Pos, e.Reason)
		}
		return fmt.Errorf("%s:%v: %s: %s", name, e.Pos, e.Path, e.Reason)
	}
	return nil
}

// Locate puts "name:LINE:COL: " in front of err, an error of loading
// data (the file name): the line of the member at the path err names (a
// schema.ValueError's, by index where it has one, or the path its message starts with, after
// "validation: " or "rejected by the dataplane: " if it is there), or of
// the nearest enclosing member the document has (a leaf a rule wants set,
// and that is missing); "name: " alone when it names none.
func Locate(name string, data []byte, err error) error {
	if err == nil {
		return nil
	}
	path := ""
	var ve *schema.ValueError
	if errors.As(err, &ve) {
		path = cmp.Or(ve.At, ve.Path)
	} else if p, _, ok := strings.Cut(trimMessagePrefix(err.Error()), ": "); ok && strings.Contains(p, "/") && !strings.ContainsAny(p, " \t") {
		// "PREFIX: PATH: ": gnmi/service's refusal of the whole
		// configuration, the path with its keys.
		path = p
	}
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := jsonpos.Member(data, p); ok {
			return &locatedError{where: fmt.Sprintf("%s:%v", name, pos), err: err}
		}
	}
	return &locatedError{where: name, err: err}
}

// trimMessagePrefix is msg without the words with which gnmi/service
// begins its refusal of a configuration it loads, before the path at
// fault: the schema's validation, or the dataplane's refusal (an
// interface the switch lacks).
func trimMessagePrefix(msg string) string {
	for _, p := range [...]string{"validation: ", "rejected by the dataplane: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			return rest
		}
	}
	return msg
}

// parentPath is path without its last element, a list entry's
// selection first (a/b[k=v]/c → a/b[k=v] → a/b → a).
func parentPath(path string) string {
	path = strings.TrimSuffix(path, "/")
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i > 0 && !strings.Contains(path[i:], "/]") {
			return path[:i]
		}
	}
	depth := 0
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i] {
		case ']':
			depth++
		case '[':
			depth--
		case '/':
			if depth == 0 {
				return path[:i]
			}
		}
	}
	return ""
}

// locatedError is err with where it is in its file; errors.Is and As see
// err.
type locatedError struct {
	where string
	err   error
}

func (e *locatedError) Error() string { return e.where + ": " + e.err.Error() }
func (e *locatedError) Unwrap() error { return e.err }
