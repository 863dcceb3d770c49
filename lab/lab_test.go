package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// TestStateDirLocked: a second lab on a state directory in use is refused
// with ErrInUse naming the holder; once released, the directory is free.
func TestStateDirLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := lockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockStateDir(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "pid ") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want ErrInUse naming the directory and the pid", err)
	}
	first.release()
	again, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.release()
}

// TestStartRefusesBusyAddress: with the dashboard's address taken, Start
// fails with ErrInUse before it starts PostgreSQL or anything else, and
// leaves the state directory unlocked.
func TestStartRefusesBusyAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	_, err = Start(context.Background(), Config{StateDir: dir, HTTPAddr: busy.Addr().String()})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "--http") {
		t.Fatalf("Start: %v, want ErrInUse saying to choose another --http", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "postgres")); !os.IsNotExist(err) {
		t.Errorf("a postgres directory was made (%v): nothing should start before the address is ours", err)
	}
	l, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("the failed start kept the state directory locked: %v", err)
	}
	l.release()
}

// TestLoopScenario: the lab topology's sized flows repeat every period up
// to the horizon, with fresh names and queue pairs; the long-lived flow
// stays one; the web-search mix runs between the burst hosts; the result is
// a valid scenario.
func TestLoopScenario(t *testing.T) {
	const path = "../scenarios/lab.yaml"
	base, err := scenario.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	horizon, period := 30*time.Second, 4*time.Second
	sc, err := LoopScenario(path, Traffic{Horizon: horizon, Period: period, WebSearchLoad: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Duration != horizon {
		t.Errorf("duration %v, want the horizon %v", sc.Duration, horizon)
	}
	var sized, longLived, web int
	for _, f := range base.Flows {
		if f.Group != "" {
			continue
		}
		if f.LongLived() {
			longLived++
		} else if f.Start < horizon {
			sized += int((horizon - f.Start + period - 1) / period)
		}
	}
	qps := map[[2]uint32]string{}
	var gotSized, gotLong int
	for _, f := range sc.Flows {
		switch {
		case f.Group == "lab-websearch":
			web++
			if f.Start >= horizon {
				t.Errorf("web-search flow %s starts at %v, after the horizon", f.Name, f.Start)
			}
		case f.Group != "":
		case f.LongLived():
			gotLong++
		default:
			gotSized++
			if f.Start >= horizon {
				t.Errorf("flow %s starts at %v, after the horizon", f.Name, f.Start)
			}
		}
		k := [2]uint32{f.SrcQP, f.DstQP}
		if prev, dup := qps[k]; dup && f.Group == "" {
			t.Errorf("flows %s and %s share queue pairs %v", prev, f.Name, k)
		}
		qps[k] = f.Name
	}
	if gotLong != longLived || gotSized != sized {
		t.Errorf("%d long-lived and %d sized flows, want %d and %d (every sized flow every %v)", gotLong, gotSized, longLived, sized, period)
	}
	if web == 0 {
		t.Error("no web-search flows")
	}
}
