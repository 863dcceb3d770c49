// Package atomicfile replaces a file whole: what is written goes to a
// temporary file in the same directory, renamed over the file once it is
// complete, so that a reader sees the old file or the new one, never an
// empty or half-written one, and a writer that fails leaves the old one.
// It depends on the standard library only.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of a write of path in progress, beside it (a
// dot file: a glob of the directory's documents does not see it). A
// reader may remove such files a crash left.
func TempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// Option changes how Write writes.
type Option func(*options)

type options struct{ durable bool }

// Durable syncs the new file before the rename and its directory after
// it: once Write returned, the new content survives a crash.
func Durable() Option { return func(o *options) { o.durable = true } }

// Write replaces path with what fn writes (perm the new file's mode). When
// fn or the writing fails, path is left as it was and the temporary file
// is removed.
func Write(path string, perm os.FileMode, fn func(w io.Writer) error, opts ...Option) (err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, TempPrefix(path)+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := fn(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if o.durable {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", tmp.Name(), err)
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if !o.durable {
		return nil
	}
	// The rename is durable once the directory is. (Should this sync
	// fail, the new content may or may not survive a crash.)
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
