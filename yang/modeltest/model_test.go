package modeltest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
	"github.com/openconfig/ygot/ygot"
	"github.com/openconfig/ygot/ytypes"

	"github.com/lhcnp/lhcnp/gen/oc"
)

// fixtures: config.json sets every config leaf of the schema; state.json is
// the same configuration with every state leaf set as well, as a gNMI target
// would serve it.
const (
	configFixture = "testdata/config.json"
	stateFixture  = "testdata/state.json"
)

// load unmarshals a JSON_IETF document into a new root and validates it.
func load(doc []byte) (*oc.Root, error) {
	root := &oc.Root{}
	if err := oc.Unmarshal(doc, root); err != nil {
		return nil, fmt.Errorf("unmarshal: %w", err)
	}
	if err := root.Validate(); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return root, nil
}

// emit marshals root as JSON_IETF with module-qualified top-level names.
func emit(t *testing.T, root *oc.Root) string {
	t.Helper()
	out, err := ygot.EmitJSON(root, &ygot.EmitJSONConfig{
		Format:         ygot.RFC7951,
		Indent:         "  ",
		RFC7951Config:  &ygot.RFC7951JSONConfig{AppendModuleName: true},
		SkipValidation: false,
	})
	if err != nil {
		t.Fatalf("EmitJSON: %v", err)
	}
	return out
}

func decode(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("json: %v", err)
	}
	return v
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{configFixture, stateFixture} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			in := readFile(t, name)
			root, err := load(in)
			if err != nil {
				t.Fatal(err)
			}
			out := emit(t, root)
			if diff := cmp.Diff(decode(t, in), decode(t, []byte(out))); diff != "" {
				t.Errorf("JSON_IETF round trip changed the document (-in, +out):\n%s", diff)
			}
			// And once more from our own output: the fixpoint.
			again, err := load([]byte(out))
			if err != nil {
				t.Fatalf("reloading emitted JSON: %v", err)
			}
			if diff := cmp.Diff(out, emit(t, again)); diff != "" {
				t.Errorf("second round trip differs (-first, +second):\n%s", diff)
			}
		})
	}
}

// schemaLeaves lists the schema paths (without keys) of the leaves under e;
// with configOnly, only config true leaves.
func schemaLeaves(e *yang.Entry, configOnly bool) []string {
	var out []string
	var walk func(e *yang.Entry)
	walk = func(e *yang.Entry) {
		if configOnly && e.ReadOnly() {
			return
		}
		if e.IsLeaf() || e.IsLeafList() {
			// Entries hang below the generated fake root, /root.
			out = append(out, strings.TrimPrefix(e.Path(), "/root"))
			return
		}
		for _, c := range e.Dir {
			walk(c)
		}
	}
	walk(e)
	sort.Strings(out)
	return out
}

// setLeaves lists the schema paths (keys dropped, module prefixes dropped) of
// the leaves set in root.
func setLeaves(t *testing.T, root *oc.Root) map[string]bool {
	t.Helper()
	notifs, err := ygot.TogNMINotifications(root, 0, ygot.GNMINotificationsConfig{UsePathElem: true})
	if err != nil {
		t.Fatalf("TogNMINotifications: %v", err)
	}
	set := map[string]bool{}
	for _, n := range notifs {
		for _, u := range n.GetUpdate() {
			set[schemaPath(n.GetPrefix(), u.GetPath())] = true
		}
	}
	return set
}

func schemaPath(prefix, p *gnmi.Path) string {
	var b strings.Builder
	for _, e := range append(append([]*gnmi.PathElem{}, prefix.GetElem()...), p.GetElem()...) {
		b.WriteString("/")
		name := e.GetName()
		if i := strings.IndexByte(name, ':'); i >= 0 {
			name = name[i+1:]
		}
		b.WriteString(name)
	}
	return b.String()
}

func rootEntry(t *testing.T) *yang.Entry {
	t.Helper()
	e := oc.SchemaTree["Lhcnp_Lhcnp"]
	if e == nil {
		t.Fatal("no Lhcnp_Lhcnp in oc.SchemaTree")
	}
	return e
}

// TestFixturesComplete keeps the fixtures honest: config.json must set every
// config leaf of the schema and state.json every leaf, so that a new leaf
// cannot be added without exercising it here.
func TestFixturesComplete(t *testing.T) {
	for _, tt := range []struct {
		file       string
		configOnly bool
	}{
		{configFixture, true},
		{stateFixture, false},
	} {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			root, err := load(readFile(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			set := setLeaves(t, root)
			want := schemaLeaves(rootEntry(t), tt.configOnly)
			if len(want) < 50 {
				t.Fatalf("schema walk found only %d leaves", len(want))
			}
			for _, p := range want {
				if !set[p] {
					t.Errorf("%s does not set %s", tt.file, p)
				}
			}
			if tt.configOnly {
				for p := range set {
					if strings.Contains(p, "/state/") || strings.HasSuffix(p, "/state") {
						t.Errorf("%s sets state leaf %s", tt.file, p)
					}
				}
			}
		})
	}
}

// TestConfigFromState checks the split the gNMI target
// relies on: pruning config false nodes from the full tree leaves exactly the
// configuration.
func TestConfigFromState(t *testing.T) {
	full, err := load(readFile(t, stateFixture))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := load(readFile(t, configFixture))
	if err != nil {
		t.Fatal(err)
	}
	if err := ygot.PruneConfigFalse(oc.SchemaTree["Root"], full); err != nil {
		t.Fatalf("PruneConfigFalse: %v", err)
	}
	if diff := cmp.Diff(emit(t, cfg), emit(t, full)); diff != "" {
		t.Errorf("config part of state.json differs from config.json (-config, +pruned):\n%s", diff)
	}
}

// TestDefaults checks that the YANG defaults reach the GoStructs: an empty
// queue populated with defaults carries the draft's recommended values.
func TestDefaults(t *testing.T) {
	root := &oc.Root{}
	q := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface("wan0").
		GetOrCreateQueues().GetOrCreateQueue(3)
	q.GetOrCreateConfig().Id = ygot.Uint8(3)
	root.GetLhcnp().GetInterfaces().GetInterface("wan0").GetOrCreateConfig().Name = ygot.String("wan0")
	q.GetOrCreateActionPolicy().GetOrCreateConfig()
	root.GetOrCreateLhcnp().GetOrCreateGlobal().GetOrCreateConfig()
	root.GetOrCreateLhcnp().GetOrCreateGlobal().GetOrCreateCodePoints().GetOrCreateConfig()
	root.GetOrCreateLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig()
	root.PopulateDefaults()
	if err := root.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	qc := q.GetConfig()
	ap := q.GetActionPolicy().GetConfig()
	g := root.GetLhcnp().GetGlobal().GetConfig()
	cp := root.GetLhcnp().GetGlobal().GetCodePoints().GetConfig()
	cs := root.GetLhcnp().GetCollaborativeSuppression().GetConfig()
	got := map[string]any{
		"enabled":               g.GetEnabled(),
		"alpha":                 qc.GetAlpha(),
		"k-base":                qc.GetKBase(),
		"trigger-persistence":   qc.GetTriggerPersistence(),
		"persistence set":       qc.TriggerPersistence != nil,
		"kmax-mode":             qc.GetKmaxMode(),
		"kmin-mode":             qc.GetKminMode(),
		"rate-reduce-percent":   ap.GetRateReducePercent(),
		"resume-percent":        ap.GetResumePercent(),
		"min-cnp-interval set":  qc.MinCnpInterval != nil,
		"one-cut-per-episode":   qc.GetOneCutPerEpisode(),
		"per-flow-rtt":          qc.GetPerFlowRtt(),
		"overload-cut":          qc.GetOverloadCut(),
		"overload-cut-growth":   qc.GetOverloadCutGrowth(),
		"repeat-resume":         ap.GetRepeatResume(),
		"resume-on-drain":       ap.GetResumeOnDrain(),
		"upstream-first":        cs.GetUpstreamFirst(),
		"upstream-first-marked": cs.GetUpstreamFirstMarked(),
		"icmpv6-type":           cp.GetIcmpv6Type(),
		"extension-class-num":   cp.GetExtensionClassNum(),
		"fast-cnp-option-type":  cp.GetFastCnpOptionType(),
		"fast-cnp-ioam-option":  cp.GetFastCnpIoamOptionType(),
		"fcn-udp-port":          cp.GetFcnUdpPort(),
		"rate-advice-opcode":    cp.GetRateAdviceOpcode(),
	}
	want := map[string]any{
		"enabled":               false,
		"alpha":                 1.0,
		"k-base":                uint64(64000), // the draft's 64KB, KB = 1000 bytes
		"trigger-persistence":   uint32(0),     // §5.4: generate at once
		"persistence set":       true,
		"kmax-mode":             oc.LhcnpTypes_KmaxMode_BDP_ADAPTIVE,
		"kmin-mode":             oc.LhcnpTypes_KminMode_DERIVED,
		"rate-reduce-percent":   uint8(30),
		"resume-percent":        uint8(50),
		"min-cnp-interval set":  false, // defaults to RTT_est, which YANG cannot say
		"one-cut-per-episode":   false, // §5.4: mark every packet above K_min
		"per-flow-rtt":          false, // §5.5: one RTT_est
		"overload-cut":          false, // §5.5: select by bytes in the queue, rate-reduce-percent
		"overload-cut-growth":   false, // §5.5: rate-reduce-percent for a growth trigger
		"repeat-resume":         false, // §5.5.1: one Resume
		"resume-on-drain":       false, // §5.5.1: Resume below K_min
		"upstream-first":        true,  // §5.7: the node closest to the source first
		"upstream-first-marked": false, // §5.7: wait for any peer on the route
		"icmpv6-type":           uint8(200),
		"extension-class-num":   uint8(247),
		"fast-cnp-option-type":  uint8(0x9E),
		"fast-cnp-ioam-option":  uint8(0x9D),
		"fcn-udp-port":          uint16(1021),
		"rate-advice-opcode":    uint8(0xC0),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want, +got):\n%s", diff)
	}
}

// step is one key or index on the way to a JSON value.
type step = any

var (
	queue3      = []step{"lhcnp:lhcnp", "interfaces", "interface", 0, "queues", "queue", 0}
	queue3Cfg   = append(append([]step{}, queue3...), "config")
	queue3AP    = append(append([]step{}, queue3...), "action-policy", "config")
	wan0Cfg     = []step{"lhcnp:lhcnp", "interfaces", "interface", 0, "config"}
	globalCfg   = []step{"lhcnp:lhcnp", "global", "config"}
	codePtCfg   = []step{"lhcnp:lhcnp", "global", "code-points", "config"}
	collabCfg   = []step{"lhcnp:lhcnp", "collaborative-suppression", "config"}
	flowTabCfg  = []step{"lhcnp:lhcnp", "flow-table", "config"}
	fcnCfg      = []step{"lhcnp:lhcnp", "fcn", "config"}
	policy0Cfg  = []step{"lhcnp:lhcnp", "rate-advice", "policies", "policy", 0, "config"}
	fastPfx0Cfg = []step{"lhcnp:lhcnp", "fast-cnp", "source-prefixes", "source-prefix", 0, "config"}
)

func at(base []step, leaf string) []step { return append(append([]step{}, base...), leaf) }

// patch sets the value at path in the decoded JSON document doc.
func patch(t *testing.T, doc any, path []step, v any) {
	t.Helper()
	cur := doc
	for i, s := range path {
		last := i == len(path)-1
		switch s := s.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("patch %v: step %d is not an object", path, i)
			}
			if last {
				m[s] = v
				return
			}
			cur = m[s]
		case int:
			l, ok := cur.([]any)
			if !ok || s >= len(l) {
				t.Fatalf("patch %v: step %d is not a list of %d+ entries", path, i, s+1)
			}
			cur = l[s]
		}
	}
}

func TestRejectsInvalid(t *testing.T) {
	base := readFile(t, configFixture)
	const q = "/lhcnp/interfaces/interface/queues/queue"
	for _, tt := range []struct {
		desc string
		path []step
		val  any
		// wantPath is the schema path the error must name.
		wantPath string
	}{
		{"alpha zero", at(queue3Cfg, "alpha"), "0", q + "/config/alpha"},
		{"alpha negative", at(queue3Cfg, "alpha"), "-0.5", q + "/config/alpha"},
		{"alpha above 1000", at(queue3Cfg, "alpha"), "1000.5", q + "/config/alpha"},
		{"rate-reduce percent above 100", at(queue3AP, "rate-reduce-percent"), 101, q + "/action-policy/config/rate-reduce-percent"},
		{"rate-reduce percent zero", at(queue3AP, "rate-reduce-percent"), 0, q + "/action-policy/config/rate-reduce-percent"},
		{"resume percent above 100", at(queue3AP, "resume-percent"), 101, q + "/action-policy/config/resume-percent"},
		{"arrival-rate drop above 100", at(collabCfg, "arrival-rate-drop-threshold"), 150, "/lhcnp/collaborative-suppression/config/arrival-rate-drop-threshold"},
		{"v-ecn above 100", at(queue3Cfg, "v-ecn"), "100.5", q + "/config/v-ecn"},
		{"v-ecn zero", at(queue3Cfg, "v-ecn"), "0", q + "/config/v-ecn"},
		{"ecn probability above 1", at(queue3Cfg, "ecn-max-probability"), "1.5", q + "/config/ecn-max-probability"},
		{"measurement interval zero", at(queue3Cfg, "measurement-interval"), 0, q + "/config/measurement-interval"},
		{"min cnp interval zero", at(queue3Cfg, "min-cnp-interval"), 0, q + "/config/min-cnp-interval"},
		{"resume hold zero", at(queue3AP, "resume-hold-duration"), 0, q + "/action-policy/config/resume-hold-duration"},
		{"pause duration zero", at(queue3AP, "pause-duration"), 0, q + "/action-policy/config/pause-duration"},
		{"observation window zero", at(collabCfg, "observation-window"), 0, "/lhcnp/collaborative-suppression/config/observation-window"},
		{"idle timeout zero", at(flowTabCfg, "idle-timeout"), 0, "/lhcnp/flow-table/config/idle-timeout"},
		{"fcn aging zero", at(fcnCfg, "aging-timeout"), 0, "/lhcnp/fcn/config/aging-timeout"},
		{"rtt-est zero", at(wan0Cfg, "rtt-est"), 0, "/lhcnp/interfaces/interface/config/rtt-est"},
		{"cnp rate limit zero", at(wan0Cfg, "cnp-rate-limit"), 0, "/lhcnp/interfaces/interface/config/cnp-rate-limit"},
		{"k-base zero", at(queue3Cfg, "k-base"), "0", q + "/config/k-base"},
		{"queue id 16", at(queue3Cfg, "id"), 16, q + "/config/id"},
		{"icmpv6 error type", at(codePtCfg, "icmpv6-type"), 127, "/lhcnp/global/code-points/config/icmpv6-type"},
		{"dscp 64", at(globalCfg, "cnp-dscp"), 64, "/lhcnp/global/config/cnp-dscp"},
		{"qp above 24 bits", at(policy0Cfg, "destination-qp"), 16777216, "/lhcnp/rate-advice/policies/policy/config/destination-qp"},
		{"bad source address", at(globalCfg, "source-address"), "2001:db8::zz", "/lhcnp/global/config/source-address"},
		{"bad prefix length", at(fastPfx0Cfg, "prefix"), "10.0.0.0/33", "/lhcnp/fast-cnp/source-prefixes/source-prefix/config/prefix"},
		{"device identifier empty", at(globalCfg, "device-identifier"), "", "/lhcnp/global/config/device-identifier"},
		// These fail in Unmarshal already, before Validate.
		{"pause duration above 16 bits", at(queue3AP, "pause-duration"), 70000, "pause-duration"},
		{"unknown kmax mode", at(queue3Cfg, "kmax-mode"), "SOMETIMES", "KmaxMode"},
		{"alpha not a number", at(queue3Cfg, "alpha"), "fast", "alpha"},
		{"unknown leaf", at(queue3Cfg, "beta"), "1", "beta"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			doc := decode(t, base)
			patch(t, doc, tt.path, tt.val)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = load(b)
			if err == nil {
				t.Fatalf("%v = %v accepted, want an error naming %s", tt.path, tt.val, tt.wantPath)
			}
			if !strings.Contains(err.Error(), tt.wantPath) {
				t.Errorf("error does not name %s:\n%v", tt.wantPath, err)
			}
		})
	}
}

// TestSetRequest exercises the path a gNMI Set takes through the generated
// schema: a JSON_IETF value for one queue's alpha (what the tuner sends) is
// applied to a copy of the running config and validated; an out-of-range
// alpha is refused with the path named.
func TestSetRequest(t *testing.T) {
	running, err := load(readFile(t, configFixture))
	if err != nil {
		t.Fatal(err)
	}
	path := &gnmi.Path{Elem: []*gnmi.PathElem{
		{Name: "lhcnp"}, {Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": "wan0"}},
		{Name: "queues"}, {Name: "queue", Key: map[string]string{"id": "3"}},
		{Name: "config"}, {Name: "alpha"},
	}}
	for _, tt := range []struct {
		desc      string
		val       string
		wantAlpha float64
		wantErr   string
	}{
		{desc: "tuner raises alpha", val: `"1.25"`, wantAlpha: 1.25},
		{desc: "alpha zero refused", val: `"0"`, wantErr: "/lhcnp/interfaces/interface/queues/queue/config/alpha"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c, err := ygot.DeepCopy(running)
			if err != nil {
				t.Fatal(err)
			}
			candidate := c.(*oc.Root)
			schema, err := oc.Schema()
			if err != nil {
				t.Fatal(err)
			}
			schema.Root = candidate
			req := &gnmi.SetRequest{Update: []*gnmi.Update{{
				Path: path,
				Val:  &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(tt.val)}},
			}}}
			err = ytypes.UnmarshalSetRequest(schema, req)
			if err == nil {
				err = candidate.Validate()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := candidate.GetLhcnp().GetInterfaces().GetInterface("wan0").GetQueues().GetQueue(3).GetConfig().GetAlpha()
			if got != tt.wantAlpha {
				t.Errorf("alpha = %v, want %v", got, tt.wantAlpha)
			}
		})
	}
}

// TestYanglintAcceptsFixtures cross-checks ygot with libyang: the fixtures
// are valid instance data for the modules. Skipped when yanglint is missing
// (scripts/yanglint.sh installs it) unless LHCNP_ORACLES=required.
func TestYanglintAcceptsFixtures(t *testing.T) {
	yl, err := exec.LookPath("yanglint")
	if err != nil {
		if os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal("yanglint not installed and LHCNP_ORACLES=required (run scripts/deps.sh)")
		}
		t.Skip("yanglint not installed; scripts/yanglint.sh installs it")
	}
	for _, tt := range []struct{ file, kind string }{
		{configFixture, "config"},
		{stateFixture, "data"},
	} {
		cmd := exec.Command(yl, "-p", "..", "-t", tt.kind, "../lhcnp.yang", tt.file)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("yanglint -t %s %s: %v\n%s", tt.kind, tt.file, err, out)
		}
	}
}
