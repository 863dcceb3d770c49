package tuner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/tuner/policy"
)

var switchAddrRE = regexp.MustCompile(`lhcnp switch (\S+): gNMI on (\S+),`)

// startLHCNPSwitch builds the lhcnp binary (LHCNP_BIN: use that one) and
// runs `lhcnp switch` with args until the benchmark ends; it returns the
// switch's gNMI address.
func startLHCNPSwitch(b *testing.B, args ...string) string {
	b.Helper()
	bin := os.Getenv("LHCNP_BIN")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "lhcnp")
		build := exec.Command("go", "build", "-o", bin, "../cmd/lhcnp")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building lhcnp: %v\n%s", err, out)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"switch"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := switchAddrRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[2]:
				default:
				}
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			b.Fatal("lhcnp switch ended before it listened")
		}
		return a
	case <-time.After(30 * time.Second):
		b.Fatal("lhcnp switch did not print its address within 30 s")
	}
	return ""
}

// BenchmarkSetCommitConfirmed measures what the closed loop in the
// simulator calls the Set delay (dataplane-sim/sim.DefaultSetDelay): the
// tuner's own push (GNMIPusher.Commit: one gNMI Set of a queue's alpha and
// V_growth with the Commit Confirmed extension, validated against the
// generated model first) against a real `lhcnp switch` process on
// loopback whose engine runs paced to the wall clock with a 2:1 incast on
// the queue (cmd/lhcnp/testdata/tuner), then the confirm that follows. The
// Set returns once the switch has applied the change, so the commit's
// latency bounds the time from decision to effect.
func BenchmarkSetCommitConfirmed(b *testing.B) {
	// A state directory of its own: the switch keeps its last confirmed
	// configuration there, and the next run must start from alpha 1 again.
	addr := startLHCNPSwitch(b, "--config", "../cmd/lhcnp/testdata/tuner/switch.yaml",
		"--listen", "127.0.0.1:0", "--insecure", "--speed", "1", "--state-dir", b.TempDir())
	p := NewGNMIPusher([]SwitchConfig{{Name: "sw", Address: addr, Insecure: true}})
	defer p.Close()
	ctx := context.Background()
	settings := []policy.Settings{
		{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 1_250_000_000},
		{KMaxMode: policy.KMaxBDP, Alpha: 0.5, VGrowthBytesPerSec: 625_000_000},
	}
	commit := make([]time.Duration, 0, b.N)
	confirm := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ch := []Change{{Interface: "wan0", Queue: 0, Before: settings[i%2], After: settings[(i+1)%2]}}
		id := fmt.Sprintf("bench-%d", i)
		start := time.Now()
		if err := p.Commit(ctx, "sw", id, ch, time.Minute); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := p.Confirm(ctx, "sw", id); err != nil {
			b.Fatal(err)
		}
		commit, confirm = append(commit, mid.Sub(start)), append(confirm, time.Since(mid))
	}
	b.StopTimer()
	pct := func(lat []time.Duration, p float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(commit, 0.5), "commit-p50-ms")
	b.ReportMetric(pct(commit, 0.99), "commit-p99-ms")
	b.ReportMetric(pct(confirm, 0.5), "confirm-p50-ms")
	b.ReportMetric(pct(confirm, 0.99), "confirm-p99-ms")
}
