package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// cancelWriter is runSwitch's stdout and stderr: it cancels the command's
// context as it writes its n-th line (0: never), and at the latest when
// the last switch's listen line is written (the end of start-up).
type cancelWriter struct {
	mu     sync.Mutex
	n      int // cancel at this line
	lines  int
	last   string // the listen line that ends start-up
	cancel context.CancelFunc
	out    bytes.Buffer
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(p)
	w.lines += bytes.Count(p, []byte("\n"))
	if (w.n > 0 && w.lines >= w.n) || strings.Contains(string(p), w.last) {
		w.cancel()
	}
	return len(p), nil
}

// TestSwitchCancelDuringStartup: `lhcnp switch` cancelled at any point of
// its start-up (before it starts, as it prints each line of its start-up:
// the users warning, the metrics address, each switch's listen line)
// returns nil or context.Canceled, never an error of a part stopped
// before it ran (the gRPC server's "the server has been stopped"). The
// stages inside the fabric's Run are cancelled one by one in
// server/fabric's TestCancelAtEveryStage.
func TestSwitchCancelDuringStartup(t *testing.T) {
	for _, tt := range []struct {
		desc string
		args []string
		last string // the last line of start-up
	}{
		{desc: "one switch", args: []string{"--config", "../../examples/switch.yaml"}, last: "lhcnp switch n1: gNMI on"},
		{desc: "three switches", args: []string{"--config", "../../examples/lab.yaml"}, last: "lhcnp switch n2: gNMI on"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := append(tt.args, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--speed", "0.01", "--insecure")
			// The lines of a full start-up, counted once with no early
			// cancel; then a run cancelled at each of them.
			full := runCancelled(t, args, 0, tt.last)
			if full.lines == 0 {
				t.Fatalf("no output:\n%s", full.out.String())
			}
			for n := -1; n <= full.lines; n++ {
				runCancelled(t, args, n, tt.last)
			}
		})
	}
}

// runCancelled runs lhcnp switch and cancels it at line n of its output
// (-1: before it starts; 0: after its last start-up line); it fails the
// test unless the command returns nil or context.Canceled.
func runCancelled(t *testing.T, args []string, n int, last string) *cancelWriter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelWriter{n: max(n, 0), last: last, cancel: cancel}
	if n < 0 {
		cancel()
	}
	err := runSwitch(ctx, withStateDir(t, args), w, w)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled at line %d: %v\noutput:\n%s", n, err, w.out.String())
	}
	return w
}
