package tuner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientoc "github.com/lhcnp/lhcnp/gen/client/oc"
	"github.com/lhcnp/lhcnp/gen/client/oc/ocpath"
	"github.com/lhcnp/lhcnp/gen/oc"
	uncompressed "github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/tuner/policy"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
)

func ygnmiClient(t *testing.T, addr string) *ygnmi.Client {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c, err := ygnmi.NewClient(gnmi.NewGNMIClient(conn))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGNMIPusherCommit: the pusher's Set reaches a real switch target over
// loopback and the node's effective K_max follows the new alpha.
func TestGNMIPusherCommit(t *testing.T) {
	ctx := context.Background()
	addr, pub := testSwitch(t)
	yc := ygnmiClient(t, addr)
	q := ocpath.Root().Lhcnp().Interface("wan0").Queue(0)
	before, err := ygnmi.Get(ctx, yc, q.EffectiveKmax().State(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: addr, Insecure: true}})
	defer p.Close()
	if err := p.Commit(ctx, "n1", "c1", []Change{halveAlpha()}, time.Minute); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := pub.PublishNow(ctx); err != nil {
		t.Fatal(err)
	}
	alpha, err := ygnmi.Get(ctx, yc, q.Alpha().State(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	vg, err := ygnmi.Get(ctx, yc, q.VGrowth().State(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	after, err := ygnmi.Get(ctx, yc, q.EffectiveKmax().State(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	if alpha != 0.5 || vg != 625_000_000 {
		t.Errorf("config after the Set: alpha %v, v-growth %v; want 0.5, 625000000", alpha, vg)
	}
	if after == before {
		t.Errorf("effective-kmax stayed %d after alpha 1 -> 0.5", after)
	}
}

// halveAlpha is the example switch's wan0/0 from its configuration (alpha
// 1) to alpha 0.5, v-growth halved with it.
func halveAlpha() Change {
	return Change{Interface: "wan0", Queue: 0,
		Before: policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 1_250_000_000},
		After:  policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.5, VGrowthBytesPerSec: 625_000_000}}
}

// TestGNMIPusherSkipVerifyWithoutCA: skip_verify without ca_file, which
// Validate and examples/tuner.yaml offer, reaches a TLS switch. It failed
// every push with "open : no such file or directory" (the empty ca_file
// read as a file).
func TestGNMIPusherSkipVerifyWithoutCA(t *testing.T) {
	ctx := context.Background()
	cert, key := servicetest.SelfSignedTLS(t, t.TempDir())
	tc, err := auth.ServerTLS(cert, key, "")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := testSwitchSecured(t, service.WithTLS(tc))
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, SkipVerify: true})
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	p := NewGNMIPusher(cfg.Switches)
	defer p.Close()
	if err := p.Commit(ctx, "n1", "c1", []Change{halveAlpha()}, time.Minute); err != nil {
		t.Fatalf("Commit over TLS with skip_verify: %v", err)
	}
}

// TestGNMIPusherRefusesOutOfModel: values outside the YANG ranges are
// never sent.
func TestGNMIPusherRefusesOutOfModel(t *testing.T) {
	p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: "127.0.0.1:1", Insecure: true}})
	defer p.Close()
	tests := []struct {
		desc  string
		after policy.Settings
		want  string
	}{
		{"alpha above 1000", policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 2000, VGrowthBytesPerSec: 1}, "alpha 2000 outside the model's range"},
		{"alpha with 4 digits", policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.1234, VGrowthBytesPerSec: 1}, "more than 3 fraction digits"},
		{"v-growth 0", policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 0}, "v-growth 0 outside the model's range"},
		{"kmax 0", policy.Settings{KMaxMode: policy.KMaxExplicit, KMaxBytes: 0, VGrowthBytesPerSec: 1}, "kmax 0 outside"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			err := p.Commit(context.Background(), "n1", "c", []Change{{Interface: "wan0", After: tt.after}}, time.Minute)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "not pushed") {
				t.Errorf("Commit: %v, want an error saying %q and not pushed", err, tt.want)
			}
		})
	}
}

// TestGNMIPusherRollbackAndConfirm: against the real target's Commit
// Confirmed, a pending commit is applied and blocks a second one, and
// Cancel restores what was before; an unconfirmed commit is rolled back by
// the switch when its rollback duration ends, and confirming it then
// fails; a confirmed one stays, and the switch takes a new commit at once
// (none is pending).
//
// What must hold while a commit is pending is asserted on commits with a
// minute's window, ended by Cancel or Confirm: a short window could end
// under load before the assertions ran. The timer's rollback has its own
// short commit, and nothing after it depends on being inside the window:
// the test awaits the rolled-back value on an ON_CHANGE subscription.
func TestGNMIPusherRollbackAndConfirm(t *testing.T) {
	ctx := context.Background()
	addr, _ := testSwitch(t)
	yc := ygnmiClient(t, addr)
	alpha := ocpath.Root().Lhcnp().Interface("wan0").Queue(0).Alpha().State()
	p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: addr, Insecure: true}})
	defer p.Close()
	ch := Change{Interface: "wan0", Queue: 0,
		Before: policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 1_250_000_000},
		After:  policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.5, VGrowthBytesPerSec: 1_250_000_000}}

	if err := p.Commit(ctx, "n1", "pending", []Change{ch}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if a, err := ygnmi.Get(ctx, yc, alpha, ygnmi.WithUseGet()); err != nil || a != 0.5 {
		t.Fatalf("alpha during the commit: %v, %v; want 0.5", a, err)
	}
	// A second commit while one is pending (decided on the pending
	// commit's settings) is refused by the switch.
	second := Change{Interface: "wan0", Queue: 0, Before: ch.After,
		After: policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.25, VGrowthBytesPerSec: 1_250_000_000}}
	if err := p.Commit(ctx, "n1", "second", []Change{second}, time.Minute); err == nil || !strings.Contains(err.Error(), "FailedPrecondition") {
		t.Errorf("second commit while one is pending: %v, want FailedPrecondition", err)
	}
	if err := p.Cancel(ctx, "n1", "pending"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if a, err := ygnmi.Get(ctx, yc, alpha, ygnmi.WithUseGet()); err != nil || a != 1 {
		t.Fatalf("alpha after the cancel: %v, %v; want 1 again", a, err)
	}

	// The switch's timer. The Set of the commit published alpha 0.5 before
	// Commit returned, so the value 1 on the subscription is the rollback
	// (or the commit was rolled back before the subscription began).
	if err := p.Commit(ctx, "n1", "unconfirmed", []Change{ch}, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := ygnmi.Await(actx, yc, alpha, 1, ygnmi.WithSubscriptionMode(gnmi.SubscriptionMode_ON_CHANGE)); err != nil {
		t.Fatalf("alpha never back to 1 after a 100 ms rollback duration (the switch did not roll back): %v", err)
	}
	// The rollback published alpha 1 with the handler's lock held, and
	// ended the pending commit under the same lock: a confirm now finds it
	// rolled back.
	if err := p.Confirm(ctx, "n1", "unconfirmed"); err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("confirming a commit the switch rolled back: %v, want an error saying it was rolled back", err)
	}

	if err := p.Commit(ctx, "n1", "kept", []Change{ch}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := p.Confirm(ctx, "n1", "kept"); err != nil {
		t.Fatalf("Confirm: %v", err)
	}
	back := ch
	back.Before, back.After = ch.After, ch.Before
	if err := p.Commit(ctx, "n1", "next", []Change{back}, time.Minute); err != nil {
		t.Fatalf("a commit after the confirm: %v (still pending?)", err)
	}
	if err := p.Cancel(ctx, "n1", "next"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if a, err := ygnmi.Get(ctx, yc, alpha, ygnmi.WithUseGet()); err != nil || a != 0.5 {
		t.Errorf("alpha after confirm then a cancelled commit: %v, %v; want the confirmed 0.5", a, err)
	}
}

// TestGNMIPusherOverloadCut: rule pinned's change (the loss step and
// overload-cut on) reaches a real switch in the pusher's one Set: the
// node runs the option (its state, published from the node, says so); the
// switch's rollback of the unconfirmed commit switches it off again, and a
// cancelled commit that switched a confirmed one off brings it back on. A
// change decided on the option the switch does not run is not pushed.
func TestGNMIPusherOverloadCut(t *testing.T) {
	ctx := context.Background()
	addr, pub := testSwitch(t)
	yc := ygnmiClient(t, addr)
	q := ocpath.Root().Lhcnp().Interface("wan0").Queue(0)
	// runs reads the node's option and alpha back as the switch publishes
	// them.
	runs := func() (bool, float64) {
		t.Helper()
		if err := pub.PublishNow(ctx); err != nil {
			t.Fatal(err)
		}
		cut, err := ygnmi.Get(ctx, yc, q.OverloadCut().State(), ygnmi.WithUseGet())
		if err != nil {
			t.Fatal(err)
		}
		alpha, err := ygnmi.Get(ctx, yc, q.Alpha().State(), ygnmi.WithUseGet())
		if err != nil {
			t.Fatal(err)
		}
		return cut, alpha
	}
	if cut, alpha := runs(); cut || alpha != 1 {
		t.Fatalf("the example switch runs overload-cut %v, alpha %v; want off, 1", cut, alpha)
	}
	p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: addr, Insecure: true}})
	defer p.Close()
	off := policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 1_250_000_000}
	on := off
	on.Alpha, on.OverloadCut = 0.75, true
	pinned := Change{Interface: "wan0", Queue: 0, Before: off, After: on}

	if err := p.Commit(ctx, "n1", "unconfirmed", []Change{pinned}, 200*time.Millisecond); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if cut, alpha := runs(); !cut || alpha != 0.75 {
		t.Fatalf("during the commit: overload-cut %v, alpha %v; want on, 0.75", cut, alpha)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		cut, alpha := runs()
		if !cut && alpha == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("overload-cut %v, alpha %v 20 s after a 200 ms rollback duration: want off, 1 (rolled back)", cut, alpha)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}

	// Decided on the option on, which the switch does not run: refused.
	stale := Change{Interface: "wan0", Queue: 0, Before: on, After: off}
	err := p.Commit(ctx, "n1", "stale", []Change{stale}, time.Minute)
	if !errors.Is(err, ErrNotBefore) || !strings.Contains(err.Error(), "overload-cut false, decided on true") {
		t.Errorf("Commit decided on overload-cut on: %v, want ErrNotBefore naming overload-cut", err)
	}

	if err := p.Commit(ctx, "n1", "kept", []Change{pinned}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := p.Confirm(ctx, "n1", "kept"); err != nil {
		t.Fatal(err)
	}
	// Rule pinned's off: only the option moves.
	offAgain := Change{Interface: "wan0", Queue: 0, Before: on, After: on}
	offAgain.After.OverloadCut = false
	if err := p.Commit(ctx, "n1", "off", []Change{offAgain}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if cut, alpha := runs(); cut || alpha != 0.75 {
		t.Errorf("after the commit switching it off: overload-cut %v, alpha %v; want off, 0.75", cut, alpha)
	}
	if err := p.Cancel(ctx, "n1", "off"); err != nil {
		t.Fatal(err)
	}
	if cut, alpha := runs(); !cut || alpha != 0.75 {
		t.Errorf("after the cancel: overload-cut %v, alpha %v; want the confirmed on, 0.75", cut, alpha)
	}
}

// TestGNMIPusherChecksBefore: a change decided on settings the switch
// does not run (telemetry behind the switch) is not pushed, and the error
// names the queue and what it runs; a change decided on what it runs is.
func TestGNMIPusherChecksBefore(t *testing.T) {
	ctx := context.Background()
	runs := policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 1_250_000_000}
	tests := []struct {
		desc   string
		before policy.Settings
		want   string // "" when pushed
	}{
		{"what the switch runs", runs, ""},
		{"another alpha", policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.978, VGrowthBytesPerSec: 1_250_000_000},
			"interface wan0 queue 0: it runs alpha 1, decided on 0.978"},
		{"another v-growth", policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 625_000_000},
			"interface wan0 queue 0: it runs v-growth 1250000000, decided on 625000000"},
		{"another mode", policy.Settings{KMaxMode: policy.KMaxExplicit, KMaxBytes: 4_000_000, VGrowthBytesPerSec: 1_250_000_000},
			"interface wan0 queue 0: it runs kmax-mode BDP_ADAPTIVE, decided on EXPLICIT"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var sets setRecorder
			addr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{sets.intercept}, nil))
			yc := ygnmiClient(t, addr)
			p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: addr, Insecure: true}})
			defer p.Close()
			after := tt.before
			after.Alpha, after.KMaxBytes = 0.5, 0
			if tt.before.KMaxMode == policy.KMaxExplicit {
				after.Alpha, after.KMaxBytes = 0, 2_000_000
			}
			err := p.Commit(ctx, "n1", "c1", []Change{{Interface: "wan0", Queue: 0, Before: tt.before, After: after}}, time.Minute)
			alpha, gerr := ygnmi.Get(ctx, yc, ocpath.Root().Lhcnp().Interface("wan0").Queue(0).Alpha().State(), ygnmi.WithUseGet())
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tt.want == "" {
				if err != nil || alpha != 0.5 {
					t.Errorf("Commit: %v, alpha %v; want it pushed (alpha 0.5)", err, alpha)
				}
				return
			}
			if !errors.Is(err, ErrNotBefore) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `switch "n1": not pushed`) {
				t.Errorf("Commit: %v, want ErrNotBefore saying %q", err, tt.want)
			}
			sets.mu.Lock()
			n := len(sets.reqs)
			sets.mu.Unlock()
			if n != 0 || alpha != 1 {
				t.Errorf("the switch received %d Sets and runs alpha %v; want none and alpha 1", n, alpha)
			}
		})
	}
}

// TestGNMIPusherChecksBeforeInOneGet: the settings of every queue of a
// commit are checked in one Get (a Get per queue took a commit of 24
// queues past switch_timeout on a loaded machine, and it was never sent),
// EXPLICIT mode and kmax read as the queue runs them.
func TestGNMIPusherChecksBeforeInOneGet(t *testing.T) {
	ctx := context.Background()
	var gets atomic.Int32
	count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if _, ok := req.(*gnmi.GetRequest); ok {
			gets.Add(1)
		}
		return h(ctx, req)
	}
	addr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{count}, nil))
	yc := ygnmiClient(t, addr)
	changes := halveQueues(t, yc, 0, 1, 2)
	runs := func(q uint8) policy.Settings { return queueRuns(t, yc, q) }
	p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: addr, Insecure: true}})
	defer p.Close()
	// Decided on a kmax queue 2 does not run: refused, naming it.
	stale := slices.Clone(changes)
	stale[2].Before.KMaxBytes = 4_000_000
	gets.Store(0)
	err := p.Commit(ctx, "n1", "stale", stale, time.Minute)
	if !errors.Is(err, ErrNotBefore) || !strings.Contains(err.Error(), "interface wan0 queue 2: it runs kmax 3000000, decided on 4000000") ||
		strings.Contains(err.Error(), "queue 0") || strings.Contains(err.Error(), "queue 1") {
		t.Errorf("Commit: %v, want ErrNotBefore for queue 2 alone", err)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("%d Gets to check 3 queues, want 1", n)
	}
	gets.Store(0)
	if err := p.Commit(ctx, "n1", "c1", changes, time.Minute); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("%d Gets to check 3 queues, want 1", n)
	}
	for _, c := range changes {
		if got := runs(c.Queue); got != c.After {
			t.Errorf("queue %d runs %+v, want %+v", c.Queue, got, c.After)
		}
	}
}

// halveQueues sets wan0's queue 1 to alpha 0.5 and queue 2 to EXPLICIT
// mode with kmax 3000000, and returns a change of each of the queues
// that halves its alpha (to 2000000 for queue 2's kmax), decided on the
// settings it runs.
func halveQueues(t *testing.T, yc *ygnmi.Client, queues ...uint8) []Change {
	t.Helper()
	wan0 := ocpath.Root().Lhcnp().Interface("wan0")
	b := &ygnmi.SetBatch{}
	ygnmi.BatchUpdate(b, wan0.Queue(1).Alpha().Config(), 0.5)
	ygnmi.BatchUpdate(b, wan0.Queue(2).KmaxMode().Config(), clientoc.LhcnpTypes_KmaxMode_EXPLICIT)
	ygnmi.BatchUpdate(b, wan0.Queue(2).Kmax().Config(), uint64(3_000_000))
	if _, err := b.Set(context.Background(), yc); err != nil {
		t.Fatal(err)
	}
	var changes []Change
	for _, q := range queues {
		before := queueRuns(t, yc, q)
		after := before
		if before.KMaxMode == policy.KMaxExplicit {
			after.KMaxBytes = 2_000_000
		} else {
			after.Alpha = before.Alpha / 2
		}
		if q == 2 && (before.KMaxMode != policy.KMaxExplicit || before.KMaxBytes != 3_000_000) {
			t.Fatalf("queue 2 runs %+v, want EXPLICIT with kmax 3000000", before)
		}
		changes = append(changes, Change{Interface: "wan0", Queue: q, Before: before, After: after})
	}
	return changes
}

// queueRuns reads the settings wan0's queue q runs from its state.
func queueRuns(t *testing.T, yc *ygnmi.Client, q uint8) policy.Settings {
	t.Helper()
	st, err := ygnmi.Get(context.Background(), yc, ocpath.Root().Lhcnp().Interface("wan0").Queue(q).State(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	if st.GetKmaxMode() == clientoc.LhcnpTypes_KmaxMode_EXPLICIT {
		return policy.Settings{KMaxMode: policy.KMaxExplicit, KMaxBytes: int64(st.GetKmax()), VGrowthBytesPerSec: int64(st.GetVGrowth())}
	}
	return policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: st.GetAlpha(), VGrowthBytesPerSec: int64(st.GetVGrowth())}
}

// TestGNMIPusherWatchesEveryQueue: the configuration watch reads each
// update's queue from its queue element, so that another client's Set of
// a queue other than 0 (queue 1's alpha, queue 2's kmax in EXPLICIT mode)
// landing between the tuner's check and its Set is seen and the commit
// cancelled. The watch took the leaf's parent (config) for the queue,
// read every update as queue 0's, and with queues 1 and 2 changed never
// saw its own Set: Commit waited out awaitOwnSet (2 s) and returned nil,
// the other client's value overwritten.
func TestGNMIPusherWatchesEveryQueue(t *testing.T) {
	for _, tt := range []struct {
		desc        string
		queue       uint8
		leaf, value string
		want        string // in Commit's error
	}{
		{desc: "alpha of a BDP_ADAPTIVE queue", queue: 1, leaf: "alpha", value: "0.75", want: "interface wan0 queue 1: alpha"},
		{desc: "kmax of an EXPLICIT queue", queue: 2, leaf: "kmax", value: "5000000", want: "interface wan0 queue 2: kmax"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			ctx := context.Background()
			var yc *ygnmi.Client
			var once sync.Once
			var operatorErr error
			operatorFirst := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if s, ok := req.(*gnmi.SetRequest); ok && len(s.GetExtension()) > 0 && s.GetExtension()[0].GetCommit().GetCommit() != nil {
					once.Do(func() {
						q := ocpath.Root().Lhcnp().Interface("wan0").Queue(tt.queue)
						if tt.leaf == "alpha" {
							_, operatorErr = ygnmi.Update(context.Background(), yc, q.Alpha().Config(), 0.75)
						} else {
							_, operatorErr = ygnmi.Update(context.Background(), yc, q.Kmax().Config(), uint64(5_000_000))
						}
					})
				}
				return h(ctx, req)
			}
			addr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{operatorFirst}, nil))
			yc = ygnmiClient(t, addr)
			changes := halveQueues(t, yc, 1, 2)
			p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: addr, Insecure: true}})
			defer p.Close()
			err := p.Commit(ctx, "n1", "c1", changes, time.Minute)
			if operatorErr != nil {
				t.Fatalf("the other client's Set: %v", operatorErr)
			}
			if !errors.Is(err, ErrOperatorSet) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Commit: %v; want ErrOperatorSet naming %q", err, tt.want)
			}
			// Cancelled: the other client's value stands, the other queue
			// runs its before.
			for _, c := range changes {
				want := c.Before
				if c.Queue == 1 && tt.queue == 1 {
					want.Alpha = 0.75
				} else if c.Queue == 2 && tt.queue == 2 {
					want.KMaxBytes = 5_000_000
				}
				if got := queueRuns(t, yc, c.Queue); got != want {
					t.Errorf("queue %d runs %+v, want %+v", c.Queue, got, want)
				}
			}
		})
	}
}

// setRecorder is a server interceptor that keeps every SetRequest the
// switch receives.
type setRecorder struct {
	mu   sync.Mutex
	reqs []*gnmi.SetRequest
}

func (r *setRecorder) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if s, ok := req.(*gnmi.SetRequest); ok {
		r.mu.Lock()
		r.reqs = append(r.reqs, s)
		r.mu.Unlock()
	}
	return h(ctx, req)
}

func (r *setRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = nil
}

func (r *setRecorder) only(t *testing.T) *gnmi.SetRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) != 1 {
		t.Fatalf("the switch received %d SetRequests, want 1", len(r.reqs))
	}
	return r.reqs[0]
}

// TestClientPathsOnTheWire: the pusher's Set, built on the compressed
// paths of gen/client, is on the wire exactly the Set the uncompressed
// gen/oc/ocpath builds for the same leaves (config/alpha, config/v-growth,
// config/kmax-mode, config/kmax, config/overload-cut: every leaf the tuner
// sets), values and extensions included, and both real switches accept it.
func TestClientPathsOnTheWire(t *testing.T) {
	ctx := context.Background()
	const id, rollback = "c1", time.Minute
	bdp := policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 1_250_000_000}
	explicit := policy.Settings{KMaxMode: policy.KMaxExplicit, KMaxBytes: 4_000_000, VGrowthBytesPerSec: 1_250_000_000}
	q := uncompressed.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0).Config()
	tests := []struct {
		desc   string
		before policy.Settings
		after  policy.Settings
		// prepare, if set, is a plain Set (uncompressed paths) both
		// switches get first, so that they run before.
		prepare func(b *ygnmi.SetBatch)
		// want builds the same Set with the uncompressed paths.
		want func(b *ygnmi.SetBatch)
	}{{
		desc:   "alpha and v-growth",
		before: bdp,
		after:  policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.5, VGrowthBytesPerSec: 625_000_000},
		want: func(b *ygnmi.SetBatch) {
			ygnmi.BatchUpdate(b, q.Alpha(), 0.5)
			ygnmi.BatchUpdate(b, q.VGrowth(), uint64(625_000_000))
		},
	}, {
		desc:   "to explicit kmax",
		before: bdp,
		after:  policy.Settings{KMaxMode: policy.KMaxExplicit, KMaxBytes: 3_000_000, VGrowthBytesPerSec: 2_500_000_000},
		want: func(b *ygnmi.SetBatch) {
			ygnmi.BatchUpdate(b, q.KmaxMode(), oc.LhcnpTypes_KmaxMode_EXPLICIT)
			ygnmi.BatchUpdate(b, q.Kmax(), uint64(3_000_000))
			ygnmi.BatchUpdate(b, q.VGrowth(), uint64(2_500_000_000))
		},
	}, {
		desc:   "rule pinned: alpha and overload-cut on",
		before: bdp,
		after:  policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.75, VGrowthBytesPerSec: 1_250_000_000, OverloadCut: true},
		want: func(b *ygnmi.SetBatch) {
			ygnmi.BatchUpdate(b, q.Alpha(), 0.75)
			ygnmi.BatchUpdate(b, q.OverloadCut(), true)
		},
	}, {
		desc:   "explicit kmax only",
		before: explicit,
		after:  policy.Settings{KMaxMode: policy.KMaxExplicit, KMaxBytes: 2_000_000, VGrowthBytesPerSec: 1_250_000_000},
		prepare: func(b *ygnmi.SetBatch) {
			ygnmi.BatchUpdate(b, q.KmaxMode(), oc.LhcnpTypes_KmaxMode_EXPLICIT)
			ygnmi.BatchUpdate(b, q.Kmax(), uint64(explicit.KMaxBytes))
		},
		want: func(b *ygnmi.SetBatch) {
			ygnmi.BatchUpdate(b, q.Kmax(), uint64(2_000_000))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var got, want setRecorder
			gotAddr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{got.intercept}, nil))
			wantAddr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{want.intercept}, nil))
			if tt.prepare != nil {
				for _, r := range []struct {
					addr string
					rec  *setRecorder
				}{{gotAddr, &got}, {wantAddr, &want}} {
					b := &ygnmi.SetBatch{}
					tt.prepare(b)
					if _, err := b.Set(ctx, ygnmiClient(t, r.addr)); err != nil {
						t.Fatalf("preparing the switch: %v", err)
					}
					r.rec.reset()
				}
			}

			p := NewGNMIPusher([]SwitchConfig{{Name: "n1", Address: gotAddr, Insecure: true}})
			defer p.Close()
			if err := p.Commit(ctx, "n1", id, []Change{{Interface: "wan0", Queue: 0, Before: tt.before, After: tt.after}}, rollback); err != nil {
				t.Fatalf("Commit: %v", err)
			}

			conn, err := grpc.NewClient(wantAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ext := commitExt(id, &gnmi_ext.CommitRequest{RollbackDuration: durationpb.New(rollback)})
			yc, err := ygnmi.NewClient(withExtensions{gnmi.NewGNMIClient(conn), []*gnmi_ext.Extension{ext}})
			if err != nil {
				t.Fatal(err)
			}
			b := &ygnmi.SetBatch{}
			tt.want(b)
			if _, err := b.Set(ctx, yc); err != nil {
				t.Fatalf("the uncompressed Set: %v", err)
			}

			if diff := cmp.Diff(want.only(t), got.only(t), protocmp.Transform()); diff != "" {
				t.Errorf("SetRequest on the wire (-uncompressed +compressed):\n%s", diff)
			}
		})
	}
}
