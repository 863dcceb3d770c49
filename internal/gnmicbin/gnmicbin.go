// Package gnmicbin finds the gnmic client that tests drive, as
// docs/gnmi-target.md says: $GNMIC, else gnmic on the PATH, else
// ../shared/tools/gnmic next to the repository (a build of gnmic's public
// source that unpacks itself on first use; it needs xz). Test support
// only; it depends on the standard library alone.
package gnmicbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Path returns gnmic's path, or an error saying how to provide one. root is
// the repository's directory.
func Path(root string) (string, error) {
	if p := os.Getenv("GNMIC"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("gnmic"); err == nil {
		return p, nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	p := filepath.Join(abs, "..", "shared", "tools", "gnmic")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("gnmic not found: set GNMIC, put gnmic on the PATH or install %s", p)
	}
	return p, nil
}
