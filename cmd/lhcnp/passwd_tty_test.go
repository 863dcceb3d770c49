//go:build linux

package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/metadata"

	"github.com/lhcnp/lhcnp/gnmi/auth"
)

// TestPasswdTerminal: with stdin a terminal, lhcnp passwd turns its echo
// off, prompts on stderr, and reads the password twice; the terminal shows
// none of it, and two that differ are refused. Over a pty (creack/pty). It
// failed before: the line was read with the terminal echoing it.
func TestPasswdTerminal(t *testing.T) {
	for _, tt := range []struct {
		desc, typed string
		wantErr     string
	}{
		{"the same password twice", "s3cret\ns3cret\n", ""},
		{"two that differ", "s3cret\ns3cre7\n", "the two passwords typed differ"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pty here (%v): TestPasswd covers a piped password only", err)
			}
			defer ptmx.Close()
			defer tty.Close()
			var out, stderr lockedBuffer
			done := make(chan error, 1)
			go func() {
				done <- runPasswd(context.Background(), []string{"--user", "ops", "--role", "rw"}, tty, &out, &stderr)
			}()
			// Typed before the echo is off, the line discipline would
			// echo the password whoever reads it.
			waitEchoOff(t, tty)
			if _, err := io.WriteString(ptmx, tt.typed); err != nil {
				t.Fatal(err)
			}
			err = <-done
			tty.Close()
			shown, _ := io.ReadAll(ptmx) // till EIO: the tty is closed
			if strings.Contains(string(shown), "s3cre") {
				t.Errorf("the terminal showed %q", shown)
			}
			if got := stderr.String(); got != "password: \nagain: \n" {
				t.Errorf("stderr %q, want the two prompts", got)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || out.String() != "" {
					t.Errorf("passwd: %v, printed %q; want the error %q and nothing printed", err, out.String(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, err := auth.ParseUsers(strings.NewReader(out.String()))
			if err != nil {
				t.Fatalf("passwd printed %q: %v", out.String(), err)
			}
			if _, err := auth.New(u).Authenticate(metadata.NewIncomingContext(context.Background(),
				metadata.Pairs(auth.MetadataUsername, "ops", auth.MetadataPassword, "s3cret"))); err != nil {
				t.Errorf("the line printed (%q) does not let s3cret in: %v", out.String(), err)
			}
		})
	}
}

// TestPasswdTerminalInterrupted: lhcnp passwd interrupted (its context
// ends: main catches SIGINT) while the password is typed returns, and gives
// the terminal its echo back.
func TestPasswdTerminalInterrupted(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runPasswd(ctx, []string{"--user", "ops"}, tty, io.Discard, io.Discard) }()
	waitEchoOff(t, tty)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("passwd interrupted: %v, want context.Canceled", err)
	}
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ECHO == 0 {
		t.Error("passwd interrupted left the terminal without echo")
	}
}

// waitEchoOff polls tty's terminal settings until its echo is off.
func waitEchoOff(t *testing.T, tty *os.File) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("lhcnp passwd left the terminal echoing for 10 s: the password typed would show")
		}
		time.Sleep(time.Millisecond)
	}
}
