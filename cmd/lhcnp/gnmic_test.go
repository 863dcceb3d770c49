package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/gnmicbin"
	"github.com/lhcnp/lhcnp/internal/oracle"
)

// gnmicPath finds gnmic as docs/gnmi-target.md says: $GNMIC, else gnmic on
// the PATH, else ../shared/tools/gnmic next to the repository (a build of
// its public source that unpacks itself on first use; it needs xz).
var gnmicPath = sync.OnceValues(func() (string, error) {
	return gnmicbin.Path("../..") // the repository, from cmd/lhcnp
})

// needGnmic returns gnmic's path or skips the test, saying why (fails it
// when the oracles are required: internal/oracle).
func needGnmic(t *testing.T) string {
	t.Helper()
	p, err := gnmicPath()
	if err != nil {
		oracle.Missing(t, err)
	}
	return p
}

// gnmic runs gnmic to its end and returns its output (stdout and stderr).
func gnmic(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, needGnmic(t), args...).CombinedOutput()
	return string(out), err
}

// gnmicOK runs gnmic and fails the test when it fails.
func gnmicOK(t *testing.T, args ...string) string {
	t.Helper()
	out, err := gnmic(t, args...)
	if err != nil {
		t.Fatalf("gnmic %q: %v\n%s", args, err, out)
	}
	return out
}

// compact removes every whitespace run, so that checks do not depend on
// gnmic's indentation.
func compact(s string) string { return strings.Join(strings.Fields(s), "") }

// wantIn checks that the compacted output holds every compacted want.
func wantIn(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	c := compact(out)
	for _, w := range wants {
		if !strings.Contains(c, compact(w)) {
			t.Errorf("%s: output lacks %s:\n%s", what, w, out)
		}
	}
}

// gnmicProc is a client process that does not end by itself (a STREAM or
// POLL subscription): its output lines arrive on a channel.
type gnmicProc struct {
	cmd    *exec.Cmd
	cancel func()
	stdin  io.WriteCloser
	lines  chan string
	mu     sync.Mutex
	all    strings.Builder
	done   chan struct{}
}

func startGnmic(t *testing.T, args ...string) *gnmicProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	return startProc(t, exec.CommandContext(ctx, needGnmic(t), args...), cancel)
}

// startProc starts cmd (made with a context that cancel ends) with its
// stdin a pipe and its output lines on a channel; it is stopped when the
// test ends.
func startProc(t *testing.T, cmd *exec.Cmd, cancel func()) *gnmicProc {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	p := &gnmicProc{cmd: cmd, cancel: cancel, stdin: stdin, lines: make(chan string, 4096), done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		pw.Close()
	}()
	go func() {
		defer close(p.done)
		defer close(p.lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.all.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// stop ends the process and waits for its output to close.
func (p *gnmicProc) stop() {
	p.cancel()
	for range p.lines {
	}
	<-p.done
}

func (p *gnmicProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all.String()
}

var errExited = errors.New("gnmic exited")

// next waits for a line whose compacted form holds marker and returns it.
func (p *gnmicProc) next(marker string) (string, error) {
	m := compact(marker)
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return "", errExited
			}
			if strings.Contains(compact(l), m) {
				return l, nil
			}
		case <-timeout:
			return "", fmt.Errorf("no %q within 60s", marker)
		}
	}
}

// waitFor fails the test unless a line holding marker comes.
func (p *gnmicProc) waitFor(t *testing.T, marker string) {
	t.Helper()
	if _, err := p.next(marker); err != nil {
		t.Fatalf("gnmic %q: %v; output:\n%s", p.cmd.Args[1:], err, p.output())
	}
}

// poll asks gnmic's interactive POLL prompt for one poll: it selects the
// (only) target and the (only) subscription.
func (p *gnmicProc) poll(t *testing.T) {
	t.Helper()
	p.waitFor(t, "select target to poll")
	if _, err := io.WriteString(p.stdin, "\n"); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "select subscription to poll")
	if _, err := io.WriteString(p.stdin, "\n"); err != nil {
		t.Fatal(err)
	}
}
