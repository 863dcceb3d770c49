package schema

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// RuleError is a configuration that the YANG types accept but the model's
// rules do not (docs/parameters.md): it names the data path of the leaf at
// fault and why.
type RuleError struct {
	Path   string
	Reason string
}

func (e *RuleError) Error() string { return store.ErrorText(e.Path) + ": " + e.Reason }

// RuleErrors is every violation of a configuration's rules that a check
// found, in path order (of Path, a number's key by its value: queue[id=2]
// before queue[id=10]): a Set that breaks two entries is told of both.
type RuleErrors []*RuleError

func (e RuleErrors) Error() string {
	s := make([]string, len(e))
	for i, re := range e {
		s[i] = re.Error()
	}
	return strings.Join(s, "; ")
}

// Unwrap lets errors.As find the first *RuleError, errors.Is any.
func (e RuleErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, re := range e {
		out[i] = re
	}
	return out
}

// err is e sorted in path order, or nil when e is empty.
func (e RuleErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	slices.SortStableFunc(e, func(a, b *RuleError) int { return ComparePaths(a.Path, b.Path) })
	return e
}

// ComparePaths orders two data paths ("/a/b[k=v]/c") as text, but for
// key values of digits alone, which compare by their value: queue[id=2]
// comes before queue[id=10], as the lists' entries do (store.ComparePaths).
// It is the path order of every list of faults: CheckRules', and the data
// node Set names when ygot refuses a schema node several entries have.
func ComparePaths(a, b string) int { return store.ComparePaths(a, b) }

// NormalizeKeys makes the key leaves of list entries agree with their keys.
// OpenConfig lists are keyed by a leafref to config/<key>; a client that
// creates an entry through a deeper path (…/interface[name=x]/config/mtu)
// does not send config/name, so it is filled in here. A key leaf, the
// entry's own (…/queue[id=4]/id) or its config copy (…/queue[id=4]/config/id),
// that differs from the entry's key is an error (gNMI 3.4.5), in the same
// words for both, where ygot named the entry's own in its words ("key field
// Id: element key 5 != map key 4"). It returns every one, as RuleErrors.
func NormalizeKeys(root *oc.Root) error {
	l := root.GetLhcnp()
	if l == nil {
		return nil
	}
	var errs RuleErrors
	if x := l.GetGlobal().GetRocev2Receivers(); x != nil {
		for k, r := range x.Receiver {
			fixKey(&r.Prefix, &r.GetOrCreateConfig().Prefix, k, entry(nil, "/lhcnp/global/rocev2-receivers/receiver", "prefix", k), "prefix", &errs)
		}
	}
	if x := l.GetFastCnp().GetSourcePrefixes(); x != nil {
		for k, s := range x.SourcePrefix {
			fixKey(&s.Prefix, &s.GetOrCreateConfig().Prefix, k, entry(nil, "/lhcnp/fast-cnp/source-prefixes/source-prefix", "prefix", k), "prefix", &errs)
		}
	}
	if x := l.GetRateAdvice().GetPolicies(); x != nil {
		for k, p := range x.Policy {
			fixKey(&p.Name, &p.GetOrCreateConfig().Name, k, entry(nil, "/lhcnp/rate-advice/policies/policy", "name", k), "name", &errs)
		}
	}
	for k, i := range interfaces(l) {
		at := entry(nil, "/lhcnp/interfaces/interface", "name", k)
		fixKey(&i.Name, &i.GetOrCreateConfig().Name, k, at, "name", &errs)
		for id, q := range queues(i) {
			fixKey(&q.Id, &q.GetOrCreateConfig().Id, id, entry(at, "/queues/queue", "id", strconv.Itoa(int(id))), "id", &errs)
		}
	}
	return errs.err()
}

// entry is the path of the list entry key=value of the list at the
// schema path list, below parent (nil: the root).
func entry(parent *gnmi.Path, list, key, value string) *gnmi.Path {
	elems := slices.Clone(parent.GetElem())
	for n := range strings.SplitSeq(strings.TrimPrefix(list, "/"), "/") {
		elems = append(elems, &gnmi.PathElem{Name: n})
	}
	elems[len(elems)-1].Key = map[string]string{key: value}
	return &gnmi.Path{Elem: elems}
}

// fixKey fills in the key leaf (key) and its config copy (cfg) of the list
// entry at, of key name, from its map key want when they are unset, and
// adds to errs each that is set to another value.
func fixKey[T comparable](key, cfg **T, want T, at *gnmi.Path, name string, errs *RuleErrors) {
	leaf := func(names ...string) string {
		p := &gnmi.Path{Elem: slices.Clone(at.GetElem())}
		for _, n := range names {
			p.Elem = append(p.Elem, &gnmi.PathElem{Name: n})
		}
		return store.PathString(p)
	}
	// A key and a value of a request may hold a line break: escaped, so
	// that the message stays one line (FuzzSet).
	differs := func(got T) string {
		return store.ErrorText(fmt.Sprint(got)) + " differs from the list key " + store.ErrorText(fmt.Sprint(want))
	}
	switch {
	case *key == nil:
		*key = ptr(want)
	case **key != want:
		*errs = append(*errs, &RuleError{Path: leaf(name), Reason: differs(**key)})
	}
	switch {
	case *cfg == nil:
		*cfg = ptr(want)
	case **cfg != want:
		*errs = append(*errs, &RuleError{Path: leaf("config", name), Reason: differs(**cfg)})
	}
}

// CheckRules checks the cross-field rules of the model that YANG cannot
// express:
//
//   - kmax must be set when kmax-mode is EXPLICIT, kmin when kmin-mode is;
//   - K_min must be below K_max (draft §5.3.2): an explicit kmin below an
//     explicit kmax, or below k-base (the smallest BDP-adaptive K_max),
//     the node's own rule (lhcnp.CheckKMin) applied to the leaves;
//   - an action policy's default-action, and the collaborative escalation
//     action, must be a congestion action, not RESUME (§5.5.1): the node's
//     rule (lhcnp.CheckCongestionAction) applied to the leaves;
//   - resume-on-drain needs per-flow-rtt and repeat-resume (the scenario
//     loader's rule for resume_on_drain);
//   - overload-cut-growth needs overload-cut, and upstream-first-marked
//     needs upstream-first (the scenario loader's rules for
//     overload_cut_growth and upstream_first_marked).
//
// Every violation is returned, in path order, as RuleErrors.
func CheckRules(root *oc.Root) error {
	l := root.GetLhcnp()
	if l == nil {
		return nil
	}
	var errs RuleErrors
	add := func(err *RuleError) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(checkAction(l.GetCollaborativeSuppression().GetConfig().GetEscalationAction(),
		"/lhcnp/collaborative-suppression/config/escalation-action"))
	add(checkUpstreamFirstMarked(l.GetCollaborativeSuppression().GetConfig()))
	for n, i := range interfaces(l) {
		for id, q := range queues(i) {
			at := store.PathString(entry(entry(nil, "/lhcnp/interfaces/interface", "name", n), "/queues/queue", "id", strconv.Itoa(int(id))))
			add(checkKMax(q.GetConfig(), at))
			add(checkAction(q.GetActionPolicy().GetConfig().GetDefaultAction(), at+"/action-policy/config/default-action"))
			add(checkResumeOnDrain(q, at))
			add(checkOverloadCutGrowth(q.GetConfig(), at))
		}
	}
	return errs.err()
}

// checkKMax checks a queue's K_max and K_min leaves (at is the queue's
// path).
func checkKMax(c *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_Config, at string) *RuleError {
	kmaxExplicit := c.GetKmaxMode() == oc.LhcnpTypes_KmaxMode_EXPLICIT
	kminExplicit := c.GetKminMode() == oc.LhcnpTypes_KminMode_EXPLICIT
	switch {
	case kmaxExplicit && c.Kmax == nil:
		return &RuleError{Path: at + "/config/kmax", Reason: "must be set when kmax-mode is EXPLICIT"}
	case kminExplicit && c.Kmin == nil:
		return &RuleError{Path: at + "/config/kmin", Reason: "must be set when kmin-mode is EXPLICIT"}
	case kmaxExplicit && c.GetKmax() < lhcnp.MinExplicitKMaxBytes:
		return &RuleError{Path: at + "/config/kmax", Reason: fmt.Sprintf("%d bytes with kmax-mode EXPLICIT: an explicit K_max needs at least %d",
			c.GetKmax(), lhcnp.MinExplicitKMaxBytes)}
	case kminExplicit:
		mode, kbase := lhcnp.KMaxBDP, int64(lhcnp.DefaultKBaseBytes)
		if kmaxExplicit {
			mode = lhcnp.KMaxExplicit
		}
		if c.KBase != nil {
			kbase = ClampInt64(*c.KBase)
		}
		if err := lhcnp.CheckKMin(ClampInt64(c.GetKmin()), mode, ClampInt64(c.GetKmax()), kbase); err != nil {
			return &RuleError{Path: at + "/config/kmin", Reason: err.Error()}
		}
	}
	return nil
}

// checkResumeOnDrain: alone resume-on-drain does nothing at the node: it is
// refused, as the scenario loader refuses resume_on_drain, rather than
// accepted and idle.
func checkResumeOnDrain(q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue, at string) *RuleError {
	ap := q.GetActionPolicy().GetConfig()
	if ap.GetResumeOnDrain() && (!q.GetConfig().GetPerFlowRtt() || !ap.GetRepeatResume()) {
		return &RuleError{Path: at + "/action-policy/config/resume-on-drain",
			Reason: "needs per-flow-rtt and repeat-resume (its Resumes are sized to the port's spare rate by them)"}
	}
	return nil
}

// checkOverloadCutGrowth: overload-cut-growth sizes the growth trigger's
// cut as overload-cut sizes a severe queue's; without it the node would
// take it and do nothing, so it is refused as the scenario loader refuses
// overload_cut_growth alone (at is the queue's path).
func checkOverloadCutGrowth(c *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_Config, at string) *RuleError {
	if c.GetOverloadCutGrowth() && !c.GetOverloadCut() {
		return &RuleError{Path: at + "/config/overload-cut-growth",
			Reason: "needs overload-cut (it sizes the growth trigger's cut as that option sizes a severe queue's)"}
	}
	return nil
}

// checkUpstreamFirstMarked: upstream-first-marked narrows upstream-first's
// wait; with upstream-first false there is no wait to narrow. The getter
// gives an unset upstream-first its default, true, so only an explicit
// false conflicts.
func checkUpstreamFirstMarked(c *oc.Lhcnp_Lhcnp_CollaborativeSuppression_Config) *RuleError {
	if c.GetUpstreamFirstMarked() && !c.GetUpstreamFirst() {
		return &RuleError{Path: "/lhcnp/collaborative-suppression/config/upstream-first-marked",
			Reason: "needs upstream-first (it narrows that wait to the flows that arrive CE-marked)"}
	}
	return nil
}

// checkAction applies the node's lhcnp.CheckCongestionAction to the
// cnp-action leaf at path; UNSET (the node's default) passes.
func checkAction(a oc.E_LhcnpTypes_CnpAction, path string) *RuleError {
	n, ok := NodeAction(a)
	if !ok {
		return nil
	}
	if err := lhcnp.CheckCongestionAction(n); err != nil {
		return &RuleError{Path: path, Reason: a.String() + ": " + err.Error()}
	}
	return nil
}

// nodeActions pairs every cnp-action of the model with the node's action.
// It is the one table of them: the rules here and the dataplane's
// translation (server/dataplane) read it, in both directions.
var nodeActions = []struct {
	model oc.E_LhcnpTypes_CnpAction
	node  wire.Action
}{
	{oc.LhcnpTypes_CnpAction_NOTIFY, wire.ActionNotify},
	{oc.LhcnpTypes_CnpAction_PAUSE, wire.ActionPause},
	{oc.LhcnpTypes_CnpAction_RATE_REDUCE, wire.ActionRateReduce},
	{oc.LhcnpTypes_CnpAction_RESUME, wire.ActionResume},
}

// NodeAction returns the node's action for the model's a; ok is false when
// a has none (UNSET).
func NodeAction(a oc.E_LhcnpTypes_CnpAction) (n wire.Action, ok bool) {
	for _, p := range nodeActions {
		if p.model == a {
			return p.node, true
		}
	}
	return 0, false
}

// ModelAction returns the model's cnp-action for the node's a, or UNSET
// when the model has none.
func ModelAction(a wire.Action) oc.E_LhcnpTypes_CnpAction {
	for _, p := range nodeActions {
		if p.node == a {
			return p.model
		}
	}
	return oc.LhcnpTypes_CnpAction_UNSET
}

func ptr[T any](v T) *T { return &v }

// ClampInt64 is a uint64 leaf (bytes, bytes/s, bits/s) as the node's
// int64, the values above the node's range held at its top: they compare
// the same way, and a threshold that high is the natural "never", which
// YANG's range 1..max lets a client write.
func ClampInt64(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

func interfaces(l *oc.Lhcnp_Lhcnp) map[string]*oc.Lhcnp_Lhcnp_Interfaces_Interface {
	if l.GetInterfaces() == nil {
		return nil
	}
	return l.GetInterfaces().Interface
}

func queues(i *oc.Lhcnp_Lhcnp_Interfaces_Interface) map[uint8]*oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue {
	if i.GetQueues() == nil {
		return nil
	}
	return i.GetQueues().Queue
}
