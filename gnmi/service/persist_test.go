package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// memPersister keeps every persisted configuration in memory; fail, when
// set, refuses the next ones.
type memPersister struct {
	mu    sync.Mutex
	docs  [][]byte
	fail  error
	calls int
}

func (m *memPersister) Persist(_ context.Context, config []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return m.fail
	}
	m.docs = append(m.docs, bytes.Clone(config))
	return nil
}

var alphaRE = regexp.MustCompile(`"alpha": "([^"]*)"`)

// alphas returns queue 3's alpha in every persisted configuration.
func (m *memPersister) alphas() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range m.docs {
		sm := alphaRE.FindSubmatch(d)
		if sm == nil {
			out = append(out, "none")
			continue
		}
		out = append(out, string(sm[1]))
	}
	return out
}

func (m *memPersister) last() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.docs[len(m.docs)-1]
}

func newPersistEnv(t *testing.T, p *memPersister) *commitEnv {
	t.Helper()
	ev := make(chan service.CommitEvent, 16)
	e := newEnv(t, service.WithCommitObserver(func(c service.CommitEvent) { ev <- c }), service.WithPersister(p))
	return &commitEnv{env: e, events: ev}
}

func setAlpha(v string) *gnmi.SetRequest {
	return &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/alpha", jsonv(v))}}
}

var errDiskFull = errors.New("no space left on device")

// TestPersisterKeepsWhatIsDurable: the initial load, a Set and a confirmed
// commit are persisted; a refused Set, a commit waiting for confirmation,
// its cancel and its rollback are not (the startup configuration stays the
// one before the commit).
func TestPersisterKeepsWhatIsDurable(t *testing.T) {
	tests := []struct {
		desc string
		run  func(t *testing.T, e *commitEnv)
		want []string // alpha in each persisted configuration, the load first
	}{
		{desc: "load", run: func(*testing.T, *commitEnv) {}, want: []string{"1.0"}},
		{desc: "set", run: func(t *testing.T, e *commitEnv) { mustSet(t, e, setAlpha("0.5")) }, want: []string{"1.0", "0.5"}},
		{desc: "set refused by the dataplane", run: func(t *testing.T, e *commitEnv) {
			e.dp.refuse = errRefused
			if _, err := e.c.Set(ctx(t), setAlpha("0.5")); err == nil {
				t.Error("Set refused by the dataplane succeeded")
			}
		}, want: []string{"1.0"}},
		{desc: "commit then confirm", run: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c1", time.Minute, alphaHalf))
			mustSet(t, e, confirmReq("c1"))
		}, want: []string{"1.0", "0.5"}},
		{desc: "commit then cancel", run: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c1", time.Minute, alphaHalf))
			mustSet(t, e, cancelReq("c1"))
		}, want: []string{"1.0"}},
		{desc: "commit rolled back by its timer", run: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c1", time.Minute, alphaHalf))
			e.next(t)
			e.clk.Advance(time.Minute)
			for e.next(t).Kind != "rollback" {
			}
		}, want: []string{"1.0"}},
		{desc: "commit still pending", run: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c1", time.Minute, alphaHalf))
		}, want: []string{"1.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			p := &memPersister{}
			e := newPersistEnv(t, p)
			tt.run(t, e)
			if diff := cmp.Diff(tt.want, p.alphas()); diff != "" {
				t.Errorf("persisted alphas (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPersistedIsWhatWasSet: the persisted document is the JSON_IETF of
// what was set (a leaf at its default because nothing set it stays unset,
// so that a later change of the model's default reaches it), a Get of "/"
// with type CONFIG returns it with the YANG defaults in use filled in
// (schema.ConfigInUse), and it loads back to the same configuration.
func TestPersistedIsWhatWasSet(t *testing.T) {
	p := &memPersister{}
	e := newPersistEnv(t, p)
	mustSet(t, e, setAlpha("0.5"))
	compact := func(b []byte) string {
		t.Helper()
		var out bytes.Buffer
		if err := json.Compact(&out, b); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	intended, err := e.h.Intended()
	if err != nil {
		t.Fatal(err)
	}
	tv, err := testSchema.EncodeNode(intended, &gnmi.Path{}, gnmi.Encoding_JSON_IETF)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(compact(tv.GetJsonIetfVal()), compact(p.last())); diff != "" {
		t.Errorf("persisted vs intended (-intended +persisted):\n%s", diff)
	}
	inUse, err := testSchema.ConfigInUse(intended)
	if err != nil {
		t.Fatal(err)
	}
	full, err := testSchema.Build(inUse)
	if err != nil {
		t.Fatal(err)
	}
	if tv, err = testSchema.EncodeNode(full, &gnmi.Path{}, gnmi.Encoding_JSON_IETF); err != nil {
		t.Fatal(err)
	}
	resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(compact(tv.GetJsonIetfVal()), compact(resp.GetNotification()[0].GetUpdate()[0].GetVal().GetJsonIetfVal())); diff != "" {
		t.Errorf("Get CONFIG vs persisted with its defaults (-persisted +get):\n%s", diff)
	}
	again := newEnv(t)
	if err := again.h.LoadJSON(ctx(t), p.last()); err != nil {
		t.Fatalf("LoadJSON of the persisted configuration: %v", err)
	}
	if diff := cmp.Diff(configLeaves(t, e.env), configLeaves(t, again)); diff != "" {
		t.Errorf("configuration loaded back (-persisted +loaded):\n%s", diff)
	}
}

// TestPersistFailureFailsTheSet: a configuration that cannot be kept is
// not committed: the Set is INTERNAL and config and dataplane are as
// before; a confirm that cannot be kept leaves its commit pending.
func TestPersistFailureFailsTheSet(t *testing.T) {
	p := &memPersister{}
	e := newPersistEnv(t, p)
	before, dpBefore := configLeaves(t, e.env), dpJSON(t, e.env)
	p.fail = errDiskFull
	_, err := e.c.Set(ctx(t), setAlpha("0.5"))
	if st := status.Convert(err); st.Code() != codes.Internal || !regexp.MustCompile(`startup configuration: no space left`).MatchString(st.Message()) {
		t.Errorf("Set with a failing persister: %v, want INTERNAL naming the startup configuration", err)
	}
	if diff := cmp.Diff(before, configLeaves(t, e.env)); diff != "" {
		t.Errorf("config after the failed Set (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(dpBefore, dpJSON(t, e.env)); diff != "" {
		t.Errorf("dataplane after the failed Set (-before +after):\n%s", diff)
	}

	p.fail = nil
	mustSet(t, e, commitReq("c1", time.Minute, alphaHalf))
	p.fail = errDiskFull
	if _, err := e.c.Set(ctx(t), confirmReq("c1")); status.Code(err) != codes.Internal {
		t.Errorf("confirm with a failing persister: %v, want INTERNAL", err)
	}
	if id, _, ok := e.h.PendingCommit(); !ok || id != "c1" {
		t.Errorf("after a failed confirm: pending %q %v, want c1 still pending", id, ok)
	}
	p.fail = nil
	mustSet(t, e, confirmReq("c1"))
	if diff := cmp.Diff([]string{"1.0", "0.5"}, p.alphas()); diff != "" {
		t.Errorf("persisted alphas (-want +got):\n%s", diff)
	}
}

// keepingDP is a service.KeepingDataplane: it counts the configurations
// applied and set back, calling keep between the two.
type keepingDP struct {
	fakeDP
	plain, keeping, setBack int
}

func (k *keepingDP) ApplyConfig(ctx context.Context, c *oc.Lhcnp_Lhcnp) error {
	k.plain++
	return k.fakeDP.ApplyConfig(ctx, c)
}

func (k *keepingDP) ApplyConfigThen(ctx context.Context, c *oc.Lhcnp_Lhcnp, keep func() error) error {
	k.keeping++
	if err := k.fakeDP.ApplyConfig(ctx, c); err != nil {
		return err
	}
	if err := keep(); err != nil {
		k.setBack++
		return err
	}
	return nil
}

// TestPersistFailureWithAKeepingDataplane: a dataplane that offers
// ApplyConfigThen (server/dataplane's Binding) writes the startup
// configuration inside it and sets itself back when the write fails: the
// Set is INTERNAL and the handler re-applies nothing (a plain ApplyConfig
// of the configuration before, which counted the change and the change
// back on the switch).
func TestPersistFailureWithAKeepingDataplane(t *testing.T) {
	p := &memPersister{}
	dp := &keepingDP{}
	h := service.NewHandler(testSchema, store.New(), dp, service.WithPersister(p))
	if err := h.LoadJSON(context.Background(), []byte(initialConfig)); err != nil {
		t.Fatal(err)
	}
	p.fail = errDiskFull
	_, err := h.Set(context.Background(), setAlpha("0.5"))
	if st := status.Convert(err); st.Code() != codes.Internal || !regexp.MustCompile(`startup configuration: no space left`).MatchString(st.Message()) {
		t.Errorf("Set with a failing persister: %v, want INTERNAL naming the startup configuration", err)
	}
	p.fail = nil
	if _, err := h.Set(context.Background(), setAlpha("0.5")); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{"plain": dp.plain, "keeping": dp.keeping, "set back": dp.setBack, "persisted": p.calls}
	want := map[string]int{"plain": 0, "keeping": 3, "set back": 1, "persisted": 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
