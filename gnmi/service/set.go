package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
	"github.com/openconfig/ygot/util"
	"github.com/openconfig/ygot/ygot"
	"github.com/openconfig/ygot/ytypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// setOp is one operation of a SetRequest, in the order applied.
type setOp struct {
	kind gnmi.UpdateResult_Operation
	name string     // "delete[0]", "update[2]": how errors name the operation
	path *gnmi.Path // as the client sent it
	full *gnmi.Path // prefix + path, module qualifiers stripped
	val  *gnmi.TypedValue
}

// Set applies a SetRequest as one transaction (gNMI 3.4): deletes, then
// replaces, then updates, in request order, on a copy of the intended
// configuration; then the key leaves are reconciled, the whole candidate is
// validated by ygot and by the model's own rules (schema.CheckRules), and
// applied to the dataplane, which validates again and applies atomically.
// Only then is the candidate committed and its leaves published, with the
// YANG defaults in use (schema.ConfigInUse). Any failure leaves config,
// state and dataplane exactly as they were.
//
// Codes (3.4.7): a path the schema does not have is NOT_FOUND; a malformed
// path, an origin in both the prefix and a path (2.7), a wildcard or
// partial-key update/replace, a value of the wrong type, a write to
// read-only state, a ygot validation error, a rule of the model (K_min
// below K_max, kmax/kmin required by EXPLICIT modes, no RESUME as a
// trigger action) and a dataplane rejection are INVALID_ARGUMENT: they are
// all faults of the request, whatever the state of the switch, so
// FAILED_PRECONDITION does not fit. union_replace is UNIMPLEMENTED. The
// message names the operation, the path and the reason, and the status
// details carry a SetResponse with one UpdateResult per operation (the
// failed one with its error, the others ABORTED; when the candidate of
// several operations fails as a whole and no one of them is at fault, all
// ABORTED saying so; the only operation of a Set is the failed one). A
// candidate that breaks the model's rules (key leaves included) in several
// entries is told of each, with its operation, in path order, up to
// maxNamedFaults ("; and N more" beyond): one status, as gNMI has for a
// Set, whose message is all gnmic prints, and each operation at fault with
// its own in the details. An operation refused on its own (its path, its
// value) stops the Set there: the ones after it would apply to a
// candidate it left half-written. A configuration the Persister
// (WithPersister) cannot keep is INTERNAL and changes nothing.
//
// With the gnmi_ext.Commit extension the Set is a confirmed commit (see
// commitAction); while one waits for confirmation, a Set without the
// extension is FAILED_PRECONDITION.
func (h *Handler) Set(ctx context.Context, req *gnmi.SetRequest) (*gnmi.SetResponse, error) {
	if len(req.GetUnionReplace()) > 0 {
		return nil, status.Error(codes.Unimplemented, "union_replace is not supported")
	}
	prefix := req.GetPrefix()
	if err := schema.CheckOrigin(prefix.GetOrigin()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "prefix: %v", err)
	}
	if err := schema.CheckElement(prefix); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "prefix %s: %v", schema.ErrorPath(prefix), err)
	}
	var ops []setOp
	for i, p := range req.GetDelete() {
		ops = append(ops, setOp{kind: gnmi.UpdateResult_DELETE, name: fmt.Sprintf("delete[%d]", i), path: p})
	}
	for i, u := range req.GetReplace() {
		ops = append(ops, setOp{kind: gnmi.UpdateResult_REPLACE, name: fmt.Sprintf("replace[%d]", i), path: u.GetPath(), val: u.GetVal()})
	}
	for i, u := range req.GetUpdate() {
		ops = append(ops, setOp{kind: gnmi.UpdateResult_UPDATE, name: fmt.Sprintf("update[%d]", i), path: u.GetPath(), val: u.GetVal()})
	}
	for i := range ops {
		ops[i].full = schema.Normalize(schema.Join(prefix, ops[i].path))
	}
	cm, err := commitExtension(req)
	if err != nil {
		return nil, err
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	// A caller that gave up while the Set waited for the lock gets no
	// change applied behind its back (it may have sent a cancel already,
	// which ran first: a commit applied now would stay pending for no one).
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	if cm != nil {
		return h.commitAction(ctx, req, ops, cm)
	}
	if h.pending != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "commit %q is waiting for confirmation until %s: confirm or cancel it before another Set",
			h.pending.id, h.pending.deadline.UTC().Format(time.RFC3339))
	}
	return h.set(ctx, req, ops, true)
}

// set applies the operations as one transaction, persisted when durable
// (not a commit waiting for confirmation); h.mu is held.
func (h *Handler) set(ctx context.Context, req *gnmi.SetRequest, ops []setOp, durable bool) (*gnmi.SetResponse, error) {
	prefix := req.GetPrefix()
	c, err := ygot.DeepCopy(h.intended)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "copy of the intended configuration: %v", err)
	}
	cand := c.(*oc.Root)
	for i := range ops {
		if err := h.applyOp(cand, prefix, &ops[i]); err != nil {
			err.op = i
			return nil, err.status(req, ops)
		}
	}
	ts, oerr := h.commit(ctx, cand, durable)
	if oerr != nil {
		return nil, h.blameCommit(prefix, ops, oerr).status(req, ops)
	}
	resp := &gnmi.SetResponse{Prefix: prefix, Timestamp: ts}
	for _, o := range ops {
		resp.Response = append(resp.Response, &gnmi.UpdateResult{Path: o.path, Op: o.kind, Timestamp: ts})
	}
	return resp, nil
}

func opErr(code codes.Code, o *setOp, format string, args ...any) *opError {
	return &opError{code: code, err: fmt.Errorf("%s %s: %s", o.name, schema.ErrorPath(o.full), fmt.Sprintf(format, args...))}
}

// applyOp applies one operation to the candidate.
func (h *Handler) applyOp(cand *oc.Root, prefix *gnmi.Path, o *setOp) *opError {
	if err := schema.CheckPathOrigin(prefix, o.path); err != nil {
		return opErr(codes.InvalidArgument, o, "%v", err)
	}
	if err := schema.CheckElement(o.path); err != nil {
		// o.full, from elem alone, is the prefix: name the path as sent.
		return &opError{code: codes.InvalidArgument, err: fmt.Errorf("%s %s: %v", o.name, schema.ErrorPath(o.path), err)}
	}
	res, err := h.s.Resolve(o.full)
	switch {
	case errors.Is(err, schema.ErrUnknown):
		return opErr(codes.NotFound, o, "%v", err)
	case err != nil:
		return opErr(codes.InvalidArgument, o, "%v", err)
	case res.ReadOnly:
		return opErr(codes.InvalidArgument, o, "read-only state cannot be changed")
	}
	ys := &ytypes.Schema{Root: cand, SchemaTree: h.s.YTypes().SchemaTree}
	if o.kind == gnmi.UpdateResult_DELETE {
		if !res.Wildcard {
			if entry, ok := h.s.KeyEntry(o.full); ok {
				return keyDeleteErr(o, entry)
			}
			if err := ytypes.DeleteNode(h.s.Root(), cand, o.full); err != nil {
				return opErr(codes.InvalidArgument, o, "%v", err)
			}
			return nil
		}
		// Expand the wildcards over the data (3.4.6), partial keys
		// included; a delete that matches nothing is accepted.
		vals, err := h.s.Values(cand)
		if err != nil {
			return opErr(codes.Internal, o, "%v", err)
		}
		seen := map[string]bool{}
		var nodes []*gnmi.Path
		for _, v := range vals {
			n, ok := schema.MatchPrefix(o.full, v.Path)
			if !ok {
				continue
			}
			node := &gnmi.Path{Elem: v.Path.GetElem()[:n]}
			if k := schema.PathString(node); !seen[k] {
				seen[k] = true
				nodes = append(nodes, node)
			}
		}
		// Key leaves go with their entries: a pattern that reaches them
		// among other nodes (interface[name=*]/config/*) deletes the
		// others; one that reaches only key leaves is refused, as a
		// concrete delete of one is.
		var keyEntry *gnmi.Path
		others := nodes[:0]
		for _, n := range nodes {
			if entry, ok := h.s.KeyEntry(n); ok {
				keyEntry = entry
				continue
			}
			others = append(others, n)
		}
		if len(others) == 0 && keyEntry != nil {
			return keyDeleteErr(o, keyEntry)
		}
		for _, n := range others {
			if err := ytypes.DeleteNode(h.s.Root(), cand, n); err != nil {
				return opErr(codes.InvalidArgument, o, "%s: %v", schema.ErrorPath(n), err)
			}
		}
		return nil
	}
	if res.Wildcard || res.PartialKeys {
		return opErr(codes.InvalidArgument, o, "%s must name exactly one node: no wildcards, every list key given (gNMI 3.4.5)", strings.ToLower(o.kind.String()))
	}
	if o.val == nil || o.val.GetValue() == nil {
		return opErr(codes.InvalidArgument, o, "no value")
	}
	if res.Entry == nil {
		return opErr(codes.InvalidArgument, o, "%s must name exactly one node", strings.ToLower(o.kind.String()))
	}
	// Every value form a client may send (PROTO scalars, json_val,
	// json_ietf_val with numbers or strings) becomes RFC 7951 JSON checked
	// against the node's types, so that errors name the YANG path.
	val, err := h.s.DecodeValue(res.Entry, o.val)
	if err != nil {
		if member := wrapsItself(res.Entry.Name, o.val); member != "" {
			return opErr(codes.InvalidArgument, o, "invalid value: %v (the value is the node itself, one member %q: send what is inside it, or set its parent)", err, member)
		}
		return opErr(codes.InvalidArgument, o, "invalid value: %v", err)
	}
	if o.kind == gnmi.UpdateResult_REPLACE && res.Entry.IsList() {
		// A list entry replaced by a value without its keys ({} for one)
		// would be keyless (gNMI 3.4.4: the target MUST reject it);
		// NormalizeKeys would otherwise quietly put the keys back.
		if missing := missingKeys(res.Entry, val.GetJsonIetfVal()); len(missing) > 0 {
			return opErr(codes.InvalidArgument, o, "the value of a list entry must carry its key %s (gNMI 3.4.4)", strings.Join(missing, ", "))
		}
	}
	if res.Entry.IsList() {
		// A key in the value that is not the path's (ygot would refuse it
		// in its own words: "element key wan9 != map key wan0").
		if elems := o.full.GetElem(); len(elems) > 0 {
			if bad := otherKeys(res.Entry, val.GetJsonIetfVal(), elems[len(elems)-1].GetKey()); len(bad) > 0 {
				return opErr(codes.InvalidArgument, o, "the value's key %s is not the path's (gNMI 3.4.5)", strings.Join(bad, ", "))
			}
		}
	}
	u := &gnmi.Update{Path: o.full, Val: val}
	sr := &gnmi.SetRequest{}
	if o.kind == gnmi.UpdateResult_REPLACE {
		sr.Replace = []*gnmi.Update{u}
	} else {
		sr.Update = []*gnmi.Update{u}
	}
	// A guard, which no input is known to reach: DecodeJSON hands ygot
	// RFC 7951 JSON checked against the same schema (members it has, each
	// scalar of its leaf's type in the form ygot reads, every list entry
	// with its keys and no two alike; otherKeys above: the entry's keys
	// are the path's). Keyless entries reached it until DecodeJSON refused
	// them; FuzzSet with a panic here found none in its 339 inputs and
	// 236,000 runs. It stays against a bug of the decoder: ygot's refusal
	// is the operation's, never a value ygot could not read taken.
	if err := ytypes.UnmarshalSetRequest(ys, sr); err != nil {
		return h.invalidValue(cand, o, err)
	}
	// Validate what this operation wrote, so that a value out of range is
	// blamed on it; the whole candidate is validated again at commit.
	nodes, err := ytypes.GetNode(h.s.Root(), cand, o.full)
	if err == nil && len(nodes) == 1 && res.Entry != nil {
		if verr := ytypes.Validate(res.Entry, nodes[0].Data, &ytypes.LeafrefOptions{IgnoreMissingData: true}); verr != nil {
			return h.invalidValue(cand, o, verr)
		}
	}
	return nil
}

// wrapsItself is the one member of a JSON object value named as the node
// the operation addresses (name, or module:name), as a file of the whole
// configuration holds "lhcnp:lhcnp": a user replacing /lhcnp with it meant
// its contents. "" otherwise.
func wrapsItself(name string, v *gnmi.TypedValue) string {
	raw := v.GetJsonIetfVal()
	if raw == nil {
		raw = v.GetJsonVal()
	}
	var obj map[string]json.RawMessage
	if name == "" || json.Unmarshal(raw, &obj) != nil || len(obj) != 1 {
		return ""
	}
	for member := range obj {
		if _, local, _ := strings.Cut(member, ":"); member == name || local == name {
			return member
		}
	}
	return ""
}

// invalidValue refuses an operation's value that ygot refused: ygot names
// the schema node without keys ("/lhcnp/rate-advice/policies/policy/config/source-prefix"),
// named here as the node of the candidate below the operation's path that
// fails, with its keys, as a validation error of the commit is.
func (h *Handler) invalidValue(cand *oc.Root, o *setOp, err error) *opError {
	ve := newValidationError(err)
	ve = ve.named(h.locate(cand, ve.path, o.full), o.full)
	if ve.path == "" {
		return opErr(codes.InvalidArgument, o, "invalid value: %s", ve.reason)
	}
	return opErr(codes.InvalidArgument, o, "invalid value: %s: %s", store.ErrorText(ve.path), ve.reason)
}

// keyDeleteErr refuses a delete of a list entry's key leaf: NormalizeKeys
// would put it back, and the client be told a delete was applied that
// changed nothing.
func keyDeleteErr(o *setOp, entry *gnmi.Path) *opError {
	return opErr(codes.InvalidArgument, o, "a list key exists as long as its entry (RFC 7950 §7.8.2): delete %s instead", schema.ErrorPath(entry))
}

// missingKeys returns the key leaves of the list e that the JSON object
// ietf (DecodeValue's output: member names without module prefixes) lacks.
func missingKeys(e *yang.Entry, ietf []byte) []string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(ietf, &obj); err != nil {
		return strings.Fields(e.Key) // DecodeValue gave an object; cannot happen
	}
	var missing []string
	for _, k := range strings.Fields(e.Key) {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	return missing
}

// otherKeys returns, as "name wan9 (the path's wan0)", the key leaves of
// the list e that the JSON object ietf sets, at its top or in its config
// container, to a value other than the path's key.
func otherKeys(e *yang.Entry, ietf []byte, pathKeys map[string]string) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(ietf, &obj) != nil {
		return nil
	}
	var cfg map[string]json.RawMessage
	if raw, ok := obj["config"]; ok {
		_ = json.Unmarshal(raw, &cfg) // not an object: left to the value's own check
	}
	var bad []string
	for _, k := range strings.Fields(e.Key) {
		want, ok := pathKeys[k]
		if !ok {
			continue
		}
		for _, raw := range []json.RawMessage{obj[k], cfg[k]} {
			if raw == nil {
				continue
			}
			got := strings.Trim(string(raw), `"`)
			if got != want {
				bad = append(bad, fmt.Sprintf("%s %s (the path's %s)", k, got, want))
				break
			}
		}
	}
	return bad
}

// commit checks the candidate, applies it to the dataplane, persists it
// when durable and makes it the intended configuration, publishing its
// leaves. It returns the timestamp of the publication.
func (h *Handler) commit(ctx context.Context, cand *oc.Root, durable bool) (int64, *opError) {
	invalid := func(err error) *opError { return &opError{code: codes.InvalidArgument, op: -1, err: err} }
	if err := schema.NormalizeKeys(cand); err != nil {
		return 0, invalid(err)
	}
	if err := h.checkConfigOnly(cand); err != nil {
		if _, ok := errors.AsType[*schema.RuleError](err); ok {
			return 0, invalid(err)
		}
		return 0, &opError{code: codes.Internal, op: -1, err: err}
	}
	// The store holds the config in use, YANG defaults included (gNMI
	// 3.3.4, 3.5.2.3); the intended configuration, which Set changes and
	// the Persister keeps, only what was set.
	inUse, err := h.s.ConfigInUse(cand)
	if err != nil {
		return 0, &opError{code: codes.Internal, op: -1, err: err}
	}
	// Validate below the fake root: ygot then skips its walk of every
	// leafref from the root, the costliest part of a Set. The model's only
	// leafrefs are list keys pointing at config/<key>, which NormalizeKeys
	// has just made consistent.
	if err := cand.GetOrCreateLhcnp().Validate(); err != nil {
		return 0, invalid(newValidationError(err))
	}
	if err := schema.CheckRules(cand); err != nil {
		return 0, invalid(err)
	}
	unkept := func(err error) *opError {
		return &opError{code: codes.Internal, op: -1, err: fmt.Errorf("startup configuration: %w", err)}
	}
	// The startup configuration only ever holds one the dataplane took:
	// written after it is applied, and, where the dataplane offers it,
	// between two of its events, so that a write that fails sets it back
	// as cleanly as a configuration it refuses.
	kd, keeping := h.dp.(KeepingDataplane)
	keeping = keeping && durable && h.o.persist != nil
	var kerr error
	apply := func() error { return h.dp.ApplyConfig(ctx, cand.GetOrCreateLhcnp()) }
	if keeping {
		apply = func() error {
			return kd.ApplyConfigThen(ctx, cand.GetOrCreateLhcnp(), func() error {
				kerr = h.persist(ctx, cand)
				return kerr
			})
		}
	}
	if err := apply(); err != nil {
		if kerr != nil {
			if !errors.Is(err, kerr) {
				err = errors.Join(kerr, err)
			}
			return 0, unkept(err)
		}
		if errors.Is(err, ErrInvalidConfig) {
			return 0, invalid(fmt.Errorf("rejected by the dataplane: %w", err))
		}
		return 0, &opError{code: errCode(err), op: -1, err: fmt.Errorf("dataplane: %w", err)}
	}
	if durable && !keeping {
		if err := h.persist(ctx, cand); err != nil {
			// Not kept, not committed: the dataplane goes back to the
			// intended configuration, which it ran a moment ago.
			if rerr := h.dp.ApplyConfig(context.WithoutCancel(ctx), h.intended.GetOrCreateLhcnp()); rerr != nil {
				h.o.log.Error("startup configuration not written; restoring the dataplane failed", "err", rerr)
			}
			return 0, unkept(err)
		}
	}
	// Committed: from here on nothing fails.
	h.intended = cand
	var b store.Batch
	cur := make(map[string]*gnmi.Path, len(inUse))
	for _, v := range inUse {
		cur[schema.PathString(v.Path)] = v.Path
		b.Update(v.Path, v.Val, store.Config)
	}
	for k, p := range h.published {
		if _, ok := cur[k]; !ok {
			b.Delete(p)
		}
	}
	ts, _ := h.st.Apply(&b, 0)
	h.published = cur
	if h.o.pub != nil {
		// The state tree catches up now rather than at the next tick; a
		// failure here does not undo the commit (the next tick retries).
		_ = h.o.pub.PublishNow(ctx)
	}
	return ts, nil
}

// checkConfigOnly refuses a candidate that holds a leaf other than config
// (a *schema.RuleError naming it); another error is the walk's own.
func (h *Handler) checkConfigOnly(cand *oc.Root) error {
	vals, err := h.s.Values(cand)
	if err != nil {
		return err
	}
	for _, v := range vals {
		l, ok := h.s.LeafAt(v.Path)
		if !ok || l.Class != schema.ClassConfig {
			return &schema.RuleError{Path: schema.PathString(v.Path), Reason: "read-only state cannot be changed"}
		}
	}
	return nil
}

// blameCommit names the operations at fault for the commit's refusal of
// the candidate of ops. ygot's validation of the candidate does not refuse
// a Set's: every operation's value was validated as it was written
// (applyOp), and the key leaves, which ygot checks on the list, not the
// entry, are checked before by schema.NormalizeKeys; only a configuration
// loaded whole (Load) meets it. Of the model's rules, every
// violation is named (up to maxNamedFaults, the rest counted), each blamed
// on its operation (blamer), so that a Set that breaks two entries is told
// of both. A failure of the candidate as a whole (the dataplane, the
// startup file) is the only operation's when the Set has one (3.4.7: none
// other was there to fail), else no one's.
func (h *Handler) blameCommit(prefix *gnmi.Path, ops []setOp, oerr *opError) *opError {
	only := func(op int) int {
		if op < 0 && len(ops) == 1 {
			return 0
		}
		return op
	}
	rules := ruleErrors(oerr.err)
	if len(rules) == 0 {
		if oerr.op = only(-1); oerr.op >= 0 {
			oerr.err = fmt.Errorf("%s %w", ops[oerr.op].name, oerr.err)
		}
		return oerr
	}
	b := &blamer{h: h, prefix: prefix, ops: ops, without: map[int][]*schema.RuleError{}}
	var faults []*opError
	for _, re := range rules[:min(len(rules), maxNamedFaults)] {
		f := &opError{code: oerr.code, op: only(b.blame(re)), err: re}
		if f.op >= 0 {
			f.err = fmt.Errorf("%s %w", ops[f.op].name, re)
		}
		faults = append(faults, f)
	}
	out := faults[0]
	out.more, out.unnamed = faults[1:], len(rules)-len(faults)
	return out
}

// maxNamedFaults is how many faults of its candidate a refused Set names,
// each with its operation; the others are counted. A candidate may break a
// rule in thousands of entries, and each named costs a check of the
// candidate without each operation related to it.
const maxNamedFaults = 8

// ruleErrors returns the rule violations err holds (schema.RuleErrors, or
// one *schema.RuleError), none when it is another error.
func ruleErrors(err error) []*schema.RuleError {
	if all, ok := errors.AsType[schema.RuleErrors](err); ok {
		return all
	}
	if re, ok := errors.AsType[*schema.RuleError](err); ok {
		return []*schema.RuleError{re}
	}
	return nil
}

// blamer finds the operation at fault for each rule violation of a Set's
// candidate; h.mu is held.
type blamer struct {
	h       *Handler
	prefix  *gnmi.Path
	ops     []setOp
	without map[int][]*schema.RuleError // violations of the candidate without ops[i], once computed
}

// blame returns the index of the operation at fault for a rule violation:
// of those whose path is the violating leaf, one of its ancestors, a
// descendant, or a sibling leaf (an update of kmax can make kmin wrong),
// the last without which the candidate does not violate it. A sibling is
// not at fault for being one: of kmax-mode EXPLICIT and alpha, updated
// together, kmax-mode is ("kmax must be set"), where the last sibling was
// named. It returns -1 when none is (all operations are then reported
// ABORTED, failed together).
func (b *blamer) blame(re *schema.RuleError) int {
	parent := re.Path
	if i := strings.LastIndexByte(parent, '/'); i > 0 {
		parent = parent[:i]
	}
	for i := len(b.ops) - 1; i >= 0; i-- {
		p := schema.PathString(b.ops[i].full)
		related := p == "/" || p == re.Path || strings.HasPrefix(re.Path, p+"/") ||
			strings.HasPrefix(p, re.Path+"/") || strings.HasPrefix(p, parent+"/")
		if related && !b.violatesWithout(i, re) {
			return i
		}
	}
	return -1
}

// violatesWithout reports whether the candidate of every operation but
// ops[skip], checked as commit checks it for rules, still violates re: the
// same leaf for the same reason (kmin-mode EXPLICIT without the kmin that
// was too large breaks another rule: the kmin was at fault).
func (b *blamer) violatesWithout(skip int, re *schema.RuleError) bool {
	all, ok := b.without[skip]
	if !ok {
		all = b.h.violationsWithout(b.prefix, b.ops, skip)
		b.without[skip] = all
	}
	return all == nil || slices.ContainsFunc(all, func(x *schema.RuleError) bool { return *x == *re })
}

// violationsWithout returns the rule violations of the candidate of every
// operation but ops[skip], checked as commit checks it for rules; nil when
// it cannot tell (another operation needed this one). Run only for a Set
// already refused; h.mu is held.
func (h *Handler) violationsWithout(prefix *gnmi.Path, ops []setOp, skip int) []*schema.RuleError {
	c, err := ygot.DeepCopy(h.intended)
	if err != nil {
		return nil
	}
	cand := c.(*oc.Root)
	for i := range ops {
		if i != skip && h.applyOp(cand, prefix, &ops[i]) != nil {
			return nil
		}
	}
	err = schema.NormalizeKeys(cand)
	if err == nil {
		err = h.checkConfigOnly(cand)
	}
	if err == nil {
		err = schema.CheckRules(cand)
	}
	if all := ruleErrors(err); all != nil {
		return all
	}
	return []*schema.RuleError{} // none: it can tell
}

// validationError is ygot's refusal of the candidate: path is the schema
// node at fault, without keys ("/lhcnp/interfaces/interface/queues/queue"),
// "" when ygot named none.
type validationError struct {
	path, reason string
}

func newValidationError(err error) *validationError {
	s := cleanYgot(firstError(err))
	if strings.HasPrefix(s, "/") {
		if i := strings.Index(s, ": "); i > 0 {
			return &validationError{path: s[:i], reason: s[i+2:]}
		}
	}
	return &validationError{reason: s}
}

// firstError returns, of ygot's list of errors (util.Errors, nested or
// not), the first in text order: ygot gathers them walking maps, in an order
// that changes from one call to the next, and a message names one.
func firstError(err error) error {
	var all []error
	var flatten func(error)
	flatten = func(err error) {
		if errs, ok := err.(util.Errors); ok {
			for _, e := range errs {
				flatten(e)
			}
			return
		}
		all = append(all, err)
	}
	flatten(err)
	if len(all) == 0 {
		return err
	}
	return slices.MinFunc(all, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
}

func (e *validationError) Error() string {
	if e.path == "" {
		return "validation: " + e.reason
	}
	return "validation: " + store.ErrorText(e.path) + ": " + e.reason
}

// named returns the error naming node, the data node at fault (nil: not
// found, ygot's schema path stays), by its path with keys; dropped when it
// is op, the operation's path, which the caller names.
func (e *validationError) named(node, op *gnmi.Path) *validationError {
	switch {
	case node == nil:
		return e
	case op != nil && proto.Equal(&gnmi.Path{Elem: op.GetElem()}, node):
		return &validationError{reason: e.reason}
	}
	return &validationError{path: schema.PathString(node), reason: e.reason}
}

// locate walks cand to the schema node ygot named (schemaPath, without
// keys) and returns the first data node there, in path order, that ygot's
// validation refuses, at or below within (nil: anywhere): ygot names a
// node among others alike. nil when none is found (ygot named no node, or
// an error that is not one node's). The walk's error is not looked at: a
// candidate ygot built from the schema has values the walk takes (commit's
// checkConfigOnly walks it first and would have refused it).
func (h *Handler) locate(cand *oc.Root, schemaPath string, within *gnmi.Path) *gnmi.Path {
	if schemaPath == "" {
		return nil
	}
	names := strings.Split(strings.TrimPrefix(schemaPath, "/"), "/")
	// Every entry of the candidate has a leaf (its keys, NormalizeKeys),
	// and Values names list entries by their map keys, as ygot's
	// validation does.
	vals, _ := h.s.Values(cand)
	nodes := map[string]*gnmi.Path{}
	for _, v := range vals {
		elems := v.Path.GetElem()
		if len(elems) < len(names) || !slices.EqualFunc(names, elems[:len(names)], func(n string, e *gnmi.PathElem) bool { return n == e.GetName() }) {
			continue
		}
		node := &gnmi.Path{Elem: elems[:len(names)]}
		if within != nil {
			if _, ok := schema.MatchPrefix(within, node); !ok {
				continue
			}
		}
		nodes[schema.PathString(node)] = node
	}
	// Path order as CheckRules' (schema.ComparePaths): a number's key by
	// its value, queue[id=2] before queue[id=10], which text put after.
	for _, k := range slices.SortedFunc(maps.Keys(nodes), schema.ComparePaths) {
		if h.fails(cand, nodes[k]) {
			return nodes[k]
		}
	}
	return nil
}

// fails reports whether ygot's validation refuses the data node p of
// cand, its own value or subtree.
func (h *Handler) fails(cand *oc.Root, p *gnmi.Path) bool {
	tn, err := ytypes.GetNode(h.s.Root(), cand, p)
	return err == nil && len(tn) == 1 &&
		ytypes.Validate(tn[0].Schema, tn[0].Data, &ytypes.LeafrefOptions{IgnoreMissingData: true}) != nil
}

// cleanYgot shortens ygot's wrapped errors: no "setNode:" or gRPC status
// wrapping, and a validation error chain ("/root/a: /root/a/b: /root/a/b/c:
// schema "c": reason") reduced to its last path and the reason.
func cleanYgot(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "setNode: ")
	if strings.HasPrefix(s, `schema "`) {
		// schema "alpha": reason → reason (the path is in the message).
		if i := strings.Index(s, `": `); i >= 0 {
			s = s[i+3:]
		}
	}
	// ygot wraps some errors in a gRPC status (code Unknown or
	// InvalidArgument): the RPC gives its own.
	for {
		i := strings.Index(s, "rpc error: code = ")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], " desc = ")
		if j < 0 {
			break
		}
		s = s[:i] + s[i+j+len(" desc = "):]
	}
	if i := strings.LastIndex(s, "/root/"); i >= 0 {
		rest := s[i+len("/root"):]
		if j := strings.Index(rest, ": "); j >= 0 {
			path, reason := rest[:j], rest[j+2:]
			if k := strings.Index(reason, "\": "); strings.HasPrefix(reason, "schema \"") && k >= 0 {
				reason = reason[k+3:]
			}
			return path + ": " + reason
		}
	}
	return s
}
