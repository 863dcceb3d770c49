package schema_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
	"github.com/openconfig/ygot/ygot"
)

func newSchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestModelsMatchYANG keeps Capabilities honest: the names, organisation
// and revision it reports are those of yang/.
func TestModelsMatchYANG(t *testing.T) {
	ms := yang.NewModules()
	for _, f := range []string{"../../yang/lhcnp-types.yang", "../../yang/lhcnp.yang"} {
		if err := ms.Read(f); err != nil {
			t.Fatal(err)
		}
	}
	if errs := ms.Process(); len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, m := range schema.Models() {
		mod := ms.Modules[m.GetName()]
		if mod == nil {
			t.Fatalf("module %s not in yang/", m.GetName())
		}
		if got := mod.Organization.Name; got != m.GetOrganization() {
			t.Errorf("%s: organization %q, Capabilities says %q", m.GetName(), got, m.GetOrganization())
		}
		if got := mod.Current(); got != m.GetVersion() {
			t.Errorf("%s: revision %q, Capabilities says %q", m.GetName(), got, m.GetVersion())
		}
	}
}

func TestLeafClassesAndKinds(t *testing.T) {
	s := newSchema(t)
	q := "/lhcnp/interfaces/interface/queues/queue"
	for _, tt := range []struct {
		path  string
		class schema.Class
		kind  store.Kind
	}{
		{q + "/config/kmax", schema.ClassConfig, store.Config},
		{q + "/id", schema.ClassConfig, store.Config},
		{q + "/state/kmax", schema.ClassApplied, store.DiscreteState},
		{q + "/state/effective-kmax", schema.ClassOperational, store.DiscreteState},
		{q + "/state/queue-depth", schema.ClassOperational, store.Gauge},
		{q + "/state/queue-growth-rate", schema.ClassOperational, store.Gauge},
		{q + "/state/ecn-marking-rate", schema.ClassOperational, store.Gauge},
		{q + "/state/counters/cnp-pause-sent", schema.ClassOperational, store.Counter},
		{q + "/state/last-cnp/metric-value", schema.ClassOperational, store.DiscreteState},
		{q + "/state/qd-above-kmax", schema.ClassOperational, store.DiscreteState},
		{"/lhcnp/flow-table/flows/flow/source-qp", schema.ClassOperational, store.DiscreteState},
		{"/lhcnp/flow-table/flows/flow/state/arrival-rate", schema.ClassOperational, store.Gauge},
		{"/lhcnp/flow-table/flows/flow/state/first-seen", schema.ClassOperational, store.DiscreteState},
	} {
		l, ok := s.LeafBySchemaPath(tt.path)
		if !ok {
			t.Errorf("%s: not a leaf", tt.path)
			continue
		}
		if l.Class != tt.class || l.Kind != tt.kind {
			t.Errorf("%s: %v/%v, want %v/%v", tt.path, l.Class, l.Kind, tt.class, tt.kind)
		}
	}
}

func TestResolve(t *testing.T) {
	s := newSchema(t)
	for _, tt := range []struct {
		desc string
		path string
		want schema.Resolved
		err  error
	}{
		{"root", "/", schema.Resolved{}, nil},
		{"config leaf", "/lhcnp/global/config/enabled", schema.Resolved{}, nil},
		{"state leaf", "/lhcnp/global/state/enabled", schema.Resolved{ReadOnly: true}, nil},
		{"list without keys", "/lhcnp/interfaces/interface/config", schema.Resolved{Wildcard: true}, nil},
		{"wildcard key", "/lhcnp/interfaces/interface[name=*]", schema.Resolved{Wildcard: true}, nil},
		{"partial keys", "/lhcnp/flow-table/flows/flow[source-qp=1]", schema.Resolved{Wildcard: true, PartialKeys: true, ReadOnly: true}, nil},
		{"full keys", "/lhcnp/flow-table/flows/flow[source-address=10.0.0.1][destination-address=2001:db8::1][source-qp=1][destination-qp=2]", schema.Resolved{ReadOnly: true}, nil},
		{"wildcard name", "/lhcnp/*/config", schema.Resolved{Wildcard: true}, nil},
		{"multi-level", "/lhcnp/.../counters", schema.Resolved{Wildcard: true, ReadOnly: true}, nil},
		{"module-qualified", "/lhcnp:lhcnp/global", schema.Resolved{}, nil},
		{"qualified at every element", "/lhcnp:lhcnp/lhcnp:global/lhcnp:config/lhcnp:enabled", schema.Resolved{}, nil},
		{"another module's qualifier", "/foo:lhcnp/global", schema.Resolved{}, schema.ErrUnknown},
		{"the types module's qualifier", "/lhcnp/global/config/lhcnp-types:enabled", schema.Resolved{}, schema.ErrUnknown},
		{"unknown element", "/lhcnp/global/nope", schema.Resolved{}, schema.ErrUnknown},
		{"keys on a container", "/lhcnp/global[a=b]", schema.Resolved{}, schema.ErrBadPath},
		{"unknown key", "/lhcnp/interfaces/interface[id=1]", schema.Resolved{}, schema.ErrBadPath},
		{"key value outside its pattern", "/lhcnp/global/rocev2-receivers/receiver[prefix=bogus]", schema.Resolved{}, schema.ErrBadPath},
		{"key value outside its length", "/lhcnp/rate-advice/policies/policy[name=]", schema.Resolved{}, schema.ErrBadPath},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := s.Resolve(schema.Normalize(store.MustPath(tt.path)))
			if !errors.Is(err, tt.err) {
				t.Fatalf("Resolve: %v, want %v", err, tt.err)
			}
			got.Entry = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestMatchPrefix(t *testing.T) {
	leaf := store.MustPath("/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]/config/kmax")
	for _, tt := range []struct {
		pat  string
		n    int
		want bool
	}{
		{"/lhcnp/interfaces", 2, true},
		{"/lhcnp/interfaces/interface", 3, true},
		{"/lhcnp/interfaces/interface[name=wan1]", 0, false},
		{"/lhcnp/interfaces/interface[name=*]/queues/queue[id=3]", 5, true},
		{"/lhcnp/*/interface/queues/queue/config", 6, true},
		{"/lhcnp/...", 1, true},
		{"/lhcnp/.../config", 6, true},
		{"/.../kmax", 7, true},
		{"/.../kmin", 0, false},
	} {
		n, ok := schema.MatchPrefix(store.MustPath(tt.pat), leaf)
		if ok != tt.want || n != tt.n {
			t.Errorf("MatchPrefix(%s) = %d, %v; want %d, %v", tt.pat, n, ok, tt.n, tt.want)
		}
	}
}

func TestEncodeLeaf(t *testing.T) {
	s := newSchema(t)
	leaf := func(p string) *schema.Leaf {
		l, ok := s.LeafBySchemaPath(p)
		if !ok {
			t.Fatalf("%s: not a leaf", p)
		}
		return l
	}
	q := "/lhcnp/interfaces/interface/queues/queue"
	for _, tt := range []struct {
		leaf string
		v    *gnmi.TypedValue
		ietf string
		json string
	}{
		{q + "/config/kmax", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 5}}, `"5"`, `5`},
		{q + "/config/id", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 3}}, `3`, `3`},
		{q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 1.25}}, `"1.25"`, `1.25`},
		{q + "/state/queue-growth-rate", &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: -7}}, `"-7"`, `-7`},
		{q + "/config/kmax-mode", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "EXPLICIT"}}, `"EXPLICIT"`, `"EXPLICIT"`},
		{q + "/config/enabled", &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}, `true`, `true`},
	} {
		l := leaf(tt.leaf)
		got, err := s.EncodeLeaf(l, tt.v, gnmi.Encoding_JSON_IETF)
		if err != nil || string(got.GetJsonIetfVal()) != tt.ietf {
			t.Errorf("%s JSON_IETF: %s, %v; want %s", tt.leaf, got.GetJsonIetfVal(), err, tt.ietf)
		}
		got, err = s.EncodeLeaf(l, tt.v, gnmi.Encoding_JSON)
		if err != nil || string(got.GetJsonVal()) != tt.json {
			t.Errorf("%s JSON: %s, %v; want %s", tt.leaf, got.GetJsonVal(), err, tt.json)
		}
	}
}

func TestValuesBuildRoundTrip(t *testing.T) {
	s := newSchema(t)
	root := &oc.Root{}
	q := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface("wan0").GetOrCreateQueues().GetOrCreateQueue(3)
	q.GetOrCreateConfig().Kmax = ygot.Uint64(9)
	q.GetOrCreateConfig().KmaxMode = oc.LhcnpTypes_KmaxMode_EXPLICIT
	q.GetOrCreateState().EcnMarkingRate = ygot.Float64(12.5)
	vals, err := s.Values(root)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.Build(vals)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(root, back); diff != "" {
		t.Errorf("round trip (-want, +got):\n%s", diff)
	}
}

func TestRules(t *testing.T) {
	base := func() (*oc.Root, *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
		r := &oc.Root{}
		return r, r.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface("wan0").GetOrCreateQueues().GetOrCreateQueue(3)
	}
	q3 := "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]"
	for _, tt := range []struct {
		desc string
		set  func(*oc.Root, *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue)
		path string // "" when valid
	}{
		{"defaults", func(*oc.Root, *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {}, ""},
		{"explicit kmin below explicit kmax", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.KmaxMode, c.Kmax, c.KminMode, c.Kmin = oc.LhcnpTypes_KmaxMode_EXPLICIT, ygot.Uint64(10), oc.LhcnpTypes_KminMode_EXPLICIT, ygot.Uint64(9)
		}, ""},
		{"equal", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.KmaxMode, c.Kmax, c.KminMode, c.Kmin = oc.LhcnpTypes_KmaxMode_EXPLICIT, ygot.Uint64(10), oc.LhcnpTypes_KminMode_EXPLICIT, ygot.Uint64(10)
		}, q3 + "/config/kmin"},
		{"explicit kmin against a set k-base", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.KBase, c.KminMode, c.Kmin = ygot.Uint64(1000), oc.LhcnpTypes_KminMode_EXPLICIT, ygot.Uint64(1000)
		}, q3 + "/config/kmin"},
		{"explicit kmin below the default k-base", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.KminMode, c.Kmin = oc.LhcnpTypes_KminMode_EXPLICIT, ygot.Uint64(lhcnp.DefaultKBaseBytes-1)
		}, ""},
		{"explicit kmin at the default k-base", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.KminMode, c.Kmin = oc.LhcnpTypes_KminMode_EXPLICIT, ygot.Uint64(lhcnp.DefaultKBaseBytes)
		}, q3 + "/config/kmin"},
		{"kmax missing", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateConfig().KmaxMode = oc.LhcnpTypes_KmaxMode_EXPLICIT
		}, q3 + "/config/kmax"},
		// The node refused it before, naming its Go field.
		{"explicit kmax 1", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.KmaxMode, c.Kmax = oc.LhcnpTypes_KmaxMode_EXPLICIT, ygot.Uint64(1)
		}, q3 + "/config/kmax"},
		{"explicit kmax 2", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.KmaxMode, c.Kmax = oc.LhcnpTypes_KmaxMode_EXPLICIT, ygot.Uint64(2)
		}, ""},
		{"kmax 1 unused (BDP-adaptive)", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateConfig().Kmax = ygot.Uint64(1)
		}, ""},
		{"escalation RESUME", func(r *oc.Root, _ *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			r.GetLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig().EscalationAction = oc.LhcnpTypes_CnpAction_RESUME
		}, "/lhcnp/collaborative-suppression/config/escalation-action"},
		{"escalation PAUSE", func(r *oc.Root, _ *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			r.GetLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig().EscalationAction = oc.LhcnpTypes_CnpAction_PAUSE
		}, ""},
		{"default-action RESUME", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateActionPolicy().GetOrCreateConfig().DefaultAction = oc.LhcnpTypes_CnpAction_RESUME
		}, q3 + "/action-policy/config/default-action"},
		{"default-action NOTIFY", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateActionPolicy().GetOrCreateConfig().DefaultAction = oc.LhcnpTypes_CnpAction_NOTIFY
		}, ""},
		{"resume-on-drain alone", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateActionPolicy().GetOrCreateConfig().ResumeOnDrain = ygot.Bool(true)
		}, q3 + "/action-policy/config/resume-on-drain"},
		{"resume-on-drain without repeat-resume", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateConfig().PerFlowRtt = ygot.Bool(true)
			q.GetOrCreateActionPolicy().GetOrCreateConfig().ResumeOnDrain = ygot.Bool(true)
		}, q3 + "/action-policy/config/resume-on-drain"},
		{"resume-on-drain with per-flow-rtt and repeat-resume", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateConfig().PerFlowRtt = ygot.Bool(true)
			a := q.GetOrCreateActionPolicy().GetOrCreateConfig()
			a.RepeatResume, a.ResumeOnDrain = ygot.Bool(true), ygot.Bool(true)
		}, ""},
		{"resume-on-drain false alone", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateActionPolicy().GetOrCreateConfig().ResumeOnDrain = ygot.Bool(false)
		}, ""},
		{"overload-cut-growth alone", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateConfig().OverloadCutGrowth = ygot.Bool(true)
		}, q3 + "/config/overload-cut-growth"},
		{"overload-cut-growth with overload-cut false", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.OverloadCut, c.OverloadCutGrowth = ygot.Bool(false), ygot.Bool(true)
		}, q3 + "/config/overload-cut-growth"},
		{"overload-cut-growth with overload-cut", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := q.GetOrCreateConfig()
			c.OverloadCut, c.OverloadCutGrowth = ygot.Bool(true), ygot.Bool(true)
		}, ""},
		{"overload-cut-growth false alone", func(_ *oc.Root, q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			q.GetOrCreateConfig().OverloadCutGrowth = ygot.Bool(false)
		}, ""},
		// upstream-first defaults to true: only an explicit false conflicts.
		{"upstream-first-marked with upstream-first unset", func(r *oc.Root, _ *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			r.GetLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig().UpstreamFirstMarked = ygot.Bool(true)
		}, ""},
		{"upstream-first-marked with upstream-first false", func(r *oc.Root, _ *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := r.GetLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig()
			c.UpstreamFirst, c.UpstreamFirstMarked = ygot.Bool(false), ygot.Bool(true)
		}, "/lhcnp/collaborative-suppression/config/upstream-first-marked"},
		{"upstream-first-marked with upstream-first true", func(r *oc.Root, _ *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			c := r.GetLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig()
			c.UpstreamFirst, c.UpstreamFirstMarked = ygot.Bool(true), ygot.Bool(true)
		}, ""},
		{"upstream-first false alone", func(r *oc.Root, _ *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) {
			r.GetLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig().UpstreamFirst = ygot.Bool(false)
		}, ""},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r, q := base()
			tt.set(r, q)
			err := schema.CheckRules(r)
			var re *schema.RuleError
			switch {
			case tt.path == "" && err != nil:
				t.Errorf("CheckRules: %v, want none", err)
			case tt.path != "" && (!errors.As(err, &re) || re.Path != tt.path):
				t.Errorf("CheckRules: %v, want a RuleError at %s", err, tt.path)
			}
		})
	}
}

// TestRulesInPathOrder: CheckRules lists every broken entry in path
// order, a number's key by its value (queue[id=2] before queue[id=10], as
// the old CheckRules walked the ids; as text 10 came first), a string's as
// text (wan10 before wan2).
func TestRulesInPathOrder(t *testing.T) {
	r := &oc.Root{}
	r.GetOrCreateLhcnp().GetOrCreateCollaborativeSuppression().GetOrCreateConfig().EscalationAction = oc.LhcnpTypes_CnpAction_RESUME
	var want []string
	for _, name := range []string{"wan10", "wan2"} {
		for _, id := range []uint8{1, 2, 10} {
			want = append(want, fmt.Sprintf("/lhcnp/interfaces/interface[name=%s]/queues/queue[id=%d]/config/kmax", name, id))
		}
	}
	for _, name := range []string{"wan2", "wan10"} {
		for _, id := range []uint8{10, 2, 1} {
			q := r.GetLhcnp().GetOrCreateInterfaces().GetOrCreateInterface(name).GetOrCreateQueues().GetOrCreateQueue(id)
			q.GetOrCreateConfig().KmaxMode = oc.LhcnpTypes_KmaxMode_EXPLICIT
		}
	}
	want = append([]string{"/lhcnp/collaborative-suppression/config/escalation-action"}, want...)
	var errs schema.RuleErrors
	if !errors.As(schema.CheckRules(r), &errs) {
		t.Fatal("CheckRules: no RuleErrors")
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Path)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want, +got):\n%s", diff)
	}
}

// TestActions: the table of actions covers every cnp-action of the
// generated model (UNSET aside), each pair reads back the same both ways,
// and the model's name is the node's (wire.Action's String, in the
// model's spelling).
func TestActions(t *testing.T) {
	values := oc.LhcnpTypes_CnpAction_UNSET.ΛMap()["E_LhcnpTypes_CnpAction"]
	if len(values) == 0 {
		t.Fatal("no cnp-action values in the generated ΛMap")
	}
	for v, def := range values {
		a := oc.E_LhcnpTypes_CnpAction(v)
		n, ok := schema.NodeAction(a)
		if a == oc.LhcnpTypes_CnpAction_UNSET {
			if ok {
				t.Errorf("NodeAction(UNSET) = %v, want none", n)
			}
			continue
		}
		if !ok {
			t.Errorf("NodeAction(%s): none", def.Name)
			continue
		}
		if got := strings.ToUpper(strings.ReplaceAll(n.String(), "-", "_")); got != def.Name {
			t.Errorf("NodeAction(%s) = %v, want the node's action of that name", def.Name, n)
		}
		if got := schema.ModelAction(n); got != a {
			t.Errorf("ModelAction(%v) = %v, want %s", n, got, def.Name)
		}
	}
}
