package collector_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
)

// writeSpill leaves batches in a state directory's spill, as a collector
// that died would.
func writeSpill(t testing.TB, stateDir string, bs ...*rows.Batch) {
	t.Helper()
	sp, err := spill.Open(filepath.Join(stateDir, "spill"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if err := sp.Append(rows.AppendBatch(nil, b)); err != nil {
			t.Fatal(err)
		}
	}
	sp.Close()
}

// waitProgress polls until poll reports done, failing the test at the
// first poll that finds no progress for stall. The bound is on no
// progress, not on the whole wait: after an outage a writer drains its
// spill at the machine's pace (a loaded CI machine takes minutes for what a
// quiet one does in seconds), while a writer that stores nothing for stall
// is stuck at any pace. progress is a count that grows with any work seen
// (rows stored); the failure reads "<what>: no progress in <stall>: <msg>"
// with msg from that last poll, saying where the wait stood.
func waitProgress(t testing.TB, stall time.Duration, what string, poll func() (done bool, progress int, msg string)) {
	t.Helper()
	deadline, seen := time.Now().Add(stall), -1
	for {
		done, progress, msg := poll()
		switch {
		case done:
			return
		case progress > seen:
			seen, deadline = progress, time.Now().Add(stall)
		case !time.Now().Before(deadline):
			t.Fatalf("%s: no progress in %v: %s", what, stall, msg)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fatalTB records a test's Fatalf and ends its goroutine, as testing's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestWaitProgress: a wait that is done returns; one that progresses at
// every poll goes on however short the stall; one that stops progressing
// fails at the first poll past the stall, naming what it waited for and
// where that poll found it.
func TestWaitProgress(t *testing.T) {
	run := func(stall time.Duration, poll func(n int) (bool, int, string)) (msg string, polls int) {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			waitProgress(f, stall, "storing sw1's last round", func() (bool, int, string) {
				polls++
				return poll(polls)
			})
		}()
		<-done
		return f.msg, polls
	}
	for _, tt := range []struct {
		desc      string
		poll      func(n int) (bool, int, string)
		wantMsg   string
		wantPolls int
	}{{
		desc:      "done at once",
		poll:      func(int) (bool, int, string) { return true, 0, "" },
		wantPolls: 1,
	}, {
		desc:      "progress at every poll",
		poll:      func(n int) (bool, int, string) { return n == 5, n, "" },
		wantPolls: 5,
	}, {
		// The first poll is progress from nothing; the second, 20 ms
		// later, is past the stall of 1 ns with nothing more.
		desc: "stalled",
		poll: func(n int) (bool, int, string) {
			return false, 7, fmt.Sprintf("/leaf: rounds stored [5 6 7], last published 9 (poll %d)", n)
		},
		wantMsg:   "storing sw1's last round: no progress in 1ns: /leaf: rounds stored [5 6 7], last published 9 (poll 2)",
		wantPolls: 2,
	}} {
		t.Run(tt.desc, func(t *testing.T) {
			msg, polls := run(time.Nanosecond, tt.poll)
			if msg != tt.wantMsg || polls != tt.wantPolls {
				t.Errorf("failed with %q after %d polls, want %q after %d", msg, polls, tt.wantMsg, tt.wantPolls)
			}
		})
	}
}
