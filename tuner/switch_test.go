package tuner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/lhcnp/lhcnp/tuner/policy"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// testSwitch serves the example switch (examples/switch.yaml: n1 of the
// §7-shaped scenario, interface wan0) on loopback with its real dataplane
// binding, the engine not running: a Set reaches the node and the state
// published afterwards shows its effect (effective-kmax). opts add to the
// target's options (interceptors that make it misbehave).
func testSwitch(t *testing.T, opts ...service.Option) (addr string, pub *dataplane.Publisher) {
	t.Helper()
	return testSwitchSecured(t, service.WithInsecure(), opts...)
}

// testSwitchSecured is testSwitch with its transport given: plain gRPC
// (service.WithInsecure) or TLS (service.WithTLS).
func testSwitchSecured(t *testing.T, transport service.Option, opts ...service.Option) (addr string, pub *dataplane.Publisher) {
	t.Helper()
	ctx := context.Background()
	sc, err := scenario.LoadFile("../examples/switch-scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.Build(sc, "n1", dataplane.BuildOptions{Interfaces: map[string]string{"wan0": "wan"}})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	st := store.New()
	b := dataplane.NewBinding(sw.Sim, sw.Node, sw.Ports)
	pub = dataplane.NewPublisher(sch, st, b)
	h := service.NewHandler(sch, st, b, service.WithStatePublisher(pub))
	data, err := os.ReadFile("../examples/switch.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LoadJSON(ctx, data); err != nil {
		t.Fatal(err)
	}
	// Subscribe as lhcnp switch serves it (server/fabric): the tuner
	// watches the queues' configuration around its Set.
	sub := subscribe.New(st, subscribe.WithOrigins(schema.Origin, schema.OpenConfigOrigin),
		subscribe.WithPathRewrite(schema.StripModules),
		subscribe.WithPathValidator(func(p *gnmi.Path) error { _, err := sch.Resolve(p); return err }))
	srv, err := service.New(append([]service.Option{transport, service.WithAuth(auth.New(nil)),
		service.WithCapabilities(h), service.WithGet(h), service.WithSet(h), service.WithSubscribe(sub)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), pub
}

// fakeSwitch is one switch n1 with one queue wan0/0: what it runs, the
// commit it has pending, and the traffic the test scripts for it.
type fakeSwitch struct {
	runs    policy.Settings
	pending *struct {
		id     string
		before policy.Settings
	}
	commits int
	traffic func(policy.Settings) traffic
	// raced: the next Commit overwrites another client's Set and its own
	// cancel fails (GNMIPusher.Commit's ErrOperatorSet with
	// ErrCancelFailed): the commit stays pending on the switch.
	raced bool
	// cancelDown: every Cancel fails (the switch unreachable for it).
	cancelDown bool
}

func newFakeSwitch(alpha float64, tr func(policy.Settings) traffic) *fakeSwitch {
	return &fakeSwitch{runs: bdpSettings(alpha), traffic: tr}
}

// Windows implements Source as scriptSource does, from what the switch
// runs: K_max moves with alpha (one BDP times alpha), so that a change
// shows applied.
func (s *fakeSwitch) Windows(_ context.Context, _ string, start, end time.Time) ([]QueueWindow, error) {
	bdp := float64(srcRate) / 8 * srcRTT.Seconds()
	w := policy.Window{Start: start, End: end, Config: s.runs, KBaseBytes: 1500,
		EffectiveKMaxBytes: int64(s.runs.Alpha * bdp), RTTEst: srcRTT, PortRateBitsPerSec: srcRate}
	w.Samples = trafficSamples(s.traffic(s.runs), start, end)
	return []QueueWindow{{Interface: "wan0", Queue: 0, Window: w}}, nil
}

func (s *fakeSwitch) Commit(_ context.Context, _, id string, changes []Change, _ time.Duration) error {
	if s.pending != nil {
		return errors.New("a commit is pending")
	}
	s.commits++
	s.pending = &struct {
		id     string
		before policy.Settings
	}{id, s.runs}
	s.runs = changes[0].After
	if s.raced {
		s.raced = false
		return fmt.Errorf("switch %q: %w (alpha 0.6 set by another client); commit %s: %w, the switch rolls it back at its deadline: %w",
			"n1", ErrOperatorSet, id, ErrCancelFailed, context.DeadlineExceeded)
	}
	return nil
}

func (s *fakeSwitch) Confirm(_ context.Context, _, id string) error {
	if s.pending == nil || s.pending.id != id {
		return errors.New("no such commit")
	}
	s.pending = nil
	return nil
}

func (s *fakeSwitch) Cancel(_ context.Context, _, id string) error {
	if s.cancelDown {
		return errors.New("rpc error: code = Unavailable desc = connection refused")
	}
	if s.pending == nil || s.pending.id != id {
		return errors.New("no such commit")
	}
	s.runs, s.pending = s.pending.before, nil
	return nil
}

// outageRecorder is memRecorder whose writes fail while down is set, as
// a database that went away would.
type outageRecorder struct {
	memRecorder
	down      bool
	holdsDown bool
	// lostAnswer: writes are committed and fail all the same, as a
	// connection lost after the database committed, before its answer.
	lostAnswer bool
}

var errDBDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

var errAnswerLost = errors.New("unexpected EOF")

func (r *outageRecorder) Record(ctx context.Context, a Action) (int64, error) {
	if r.down {
		return 0, errDBDown
	}
	id, err := r.memRecorder.Record(ctx, a)
	if err == nil && r.lostAnswer {
		return 0, errAnswerLost
	}
	return id, err
}

func (r *outageRecorder) SetOutcome(ctx context.Context, id int64, o Outcome, reason, errText string, j *Judgement) error {
	if r.down {
		return errDBDown
	}
	err := r.memRecorder.SetOutcome(ctx, id, o, reason, errText, j)
	if err == nil && r.lostAnswer {
		return errAnswerLost
	}
	return err
}

func (r *outageRecorder) Forget(ctx context.Context, key string) error {
	if r.down {
		return errDBDown
	}
	return r.memRecorder.Forget(ctx, key)
}

func (r *outageRecorder) OperatorHolds(ctx context.Context, target string, now time.Time) (map[QueueID]OperatorHold, error) {
	if r.holdsDown {
		return nil, errDBDown
	}
	return r.memRecorder.OperatorHolds(ctx, target, now)
}

func newFakeLoop(t *testing.T, sw *fakeSwitch, rec Recorder) (*Tuner, Config) {
	t.Helper()
	cfg := testConfig(SwitchConfig{Name: "n1", Address: "127.0.0.1:1", Insecure: true})
	return newTuner(t, cfg, sw, sw, rec), cfg
}

// queuesSwitch is a switch n1 with queues 0 to len(runs)-1 of wan0, each
// with its settings and scripted traffic: a commit of several changes, as
// a start on every queue of an interface makes.
type queuesSwitch struct {
	runs, before []policy.Settings
	pending      string
	traffic      func(queue uint8, s policy.Settings) traffic
}

// Windows implements Source as fakeSwitch does, for every queue.
func (s *queuesSwitch) Windows(_ context.Context, _ string, start, end time.Time) ([]QueueWindow, error) {
	bdp := float64(srcRate) / 8 * srcRTT.Seconds()
	var out []QueueWindow
	for q, runs := range s.runs {
		w := policy.Window{Start: start, End: end, Config: runs, KBaseBytes: 1500,
			EffectiveKMaxBytes: int64(runs.Alpha * bdp), RTTEst: srcRTT, PortRateBitsPerSec: srcRate}
		w.Samples = trafficSamples(s.traffic(uint8(q), runs), start, end)
		out = append(out, QueueWindow{Interface: "wan0", Queue: uint8(q), Window: w})
	}
	return out, nil
}

func (s *queuesSwitch) Commit(_ context.Context, _, id string, changes []Change, _ time.Duration) error {
	if s.pending != "" {
		return errors.New("a commit is pending")
	}
	s.pending, s.before = id, slices.Clone(s.runs)
	for _, c := range changes {
		s.runs[c.Queue] = c.After
	}
	return nil
}

func (s *queuesSwitch) Confirm(_ context.Context, _, id string) error {
	if s.pending != id {
		return errors.New("no such commit")
	}
	s.pending = ""
	return nil
}

func (s *queuesSwitch) Cancel(_ context.Context, _, id string) error {
	if s.pending != id {
		return errors.New("no such commit")
	}
	s.pending, s.runs = "", s.before
	return nil
}
