package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Get serves a snapshot of the store (gNMI 3.3): one notification per
// requested path, leaves filtered by data type, encoded in JSON, JSON_IETF
// (a JSON object per addressed node) or PROTO (one typed update per leaf).
//
// Errors: an unsupported encoding is UNIMPLEMENTED (3.3.1); a path that is
// malformed or not in the schema, a foreign origin or model, an origin in
// both the prefix and a path (2.7), an unknown data type are
// INVALID_ARGUMENT — 3.3.1: "In the case that the path specified is
// not valid, the target MUST return an RPC response indicating an error code
// of InvalidArgument". A valid path that names one node holding no data of
// the requested type is NOT_FOUND (as lemming does, and as ygnmi's Get reads
// "not present"); a wildcard path that matches nothing gets an empty
// notification.
func (h *Handler) Get(ctx context.Context, req *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	enc := req.GetEncoding()
	if !schema.Encoding(enc) {
		return nil, status.Errorf(codes.Unimplemented, "encoding %v is not supported: use JSON, JSON_IETF or PROTO", enc)
	}
	dt := req.GetType()
	if _, ok := gnmi.GetRequest_DataType_name[int32(dt)]; !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unknown data type %d", dt)
	}
	if err := checkModels(req.GetUseModels()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	prefix := req.GetPrefix()
	if err := schema.CheckOrigin(prefix.GetOrigin()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "prefix: %v", err)
	}
	if err := schema.CheckElement(prefix); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "prefix %s: %v", schema.ErrorPath(prefix), err)
	}
	paths := req.GetPath()
	if len(paths) == 0 {
		paths = []*gnmi.Path{{}}
	}
	resp := &gnmi.GetResponse{}
	for _, p := range paths {
		if err := schema.CheckPathOrigin(prefix, p); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: %v", schema.ErrorPath(p), err)
		}
		if err := schema.CheckElement(p); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: %v", schema.ErrorPath(p), err)
		}
		full := schema.Normalize(schema.Join(prefix, p))
		res, err := h.s.Resolve(full)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: %v", schema.ErrorPath(full), err)
		}
		n, err := h.notification(prefix, p, full, res, dt, enc)
		if err != nil {
			return nil, err
		}
		resp.Notification = append(resp.Notification, n)
	}
	return resp, nil
}

func checkModels(models []*gnmi.ModelData) error {
	for _, m := range models {
		known := false
		for _, ours := range schema.Models() {
			if m.GetName() == ours.GetName() && (m.GetVersion() == "" || m.GetVersion() == ours.GetVersion()) {
				known = true
			}
		}
		if !known {
			return fmt.Errorf("use_models: model %q version %q is not served", m.GetName(), m.GetVersion())
		}
	}
	return nil
}

type leafVal struct {
	path *gnmi.Path
	key  string
	val  *store.Value
	leaf *schema.Leaf
	node int // length of the addressed node's path
}

// notification builds the answer for one requested path.
func (h *Handler) notification(prefix, p, full *gnmi.Path, res schema.Resolved, dt gnmi.GetRequest_DataType, enc gnmi.Encoding) (*gnmi.Notification, error) {
	pat, err := store.NewPattern(nil, full)
	if err != nil {
		// Resolve accepted the path, so this does not happen; the
		// pattern's error names the path too, which this one does.
		reason := err.Error()
		if pe, ok := errors.AsType[*store.PatternError](err); ok {
			reason = pe.Reason
		}
		return nil, status.Errorf(codes.InvalidArgument, "path %s: %s", schema.ErrorPath(full), reason)
	}
	var vals []leafVal
	h.st.Walk(pat, func(l *store.Node, v *store.Value, _ store.Kind) {
		leaf, ok := h.s.LeafAt(l.Path())
		if !ok || !leaf.Class.In(dt) {
			return
		}
		n, ok := schema.MatchPrefix(full, l.Path())
		if !ok {
			return
		}
		vals = append(vals, leafVal{path: l.Path(), key: l.Key(), val: v, leaf: leaf, node: n})
	})
	// Path order with a number key by its value (queue[id=2] before
	// queue[id=10]), as Set's errors name entries: the text's order put
	// 10 first. SortByPath splits each key once (ComparePaths as the
	// comparator split both at every comparison: BenchmarkInitialSync).
	store.SortByPath(vals, func(v leafVal) string { return v.key })

	notif := &gnmi.Notification{Prefix: responsePrefix(h.s, prefix)}
	if len(vals) == 0 {
		if !res.Wildcard && len(full.GetElem()) > 0 {
			return nil, status.Errorf(codes.NotFound, "%s: no %sdata", schema.ErrorPath(full), dataTypeName(dt))
		}
		notif.Timestamp = h.o.clk.Now().UnixNano()
		return notif, nil
	}
	skip := len(notif.GetPrefix().GetElem())
	rel := func(q *gnmi.Path) *gnmi.Path {
		return &gnmi.Path{Origin: p.GetOrigin(), Elem: q.GetElem()[skip:]}
	}
	for _, v := range vals {
		if v.val.TS > notif.Timestamp {
			notif.Timestamp = v.val.TS
		}
	}
	if enc == gnmi.Encoding_PROTO {
		for _, v := range vals {
			notif.Update = append(notif.Update, &gnmi.Update{Path: rel(v.path), Val: v.val.TV})
		}
		return notif, nil
	}
	// JSON and JSON_IETF: one value per addressed node, in path order.
	for i := 0; i < len(vals); {
		node := &gnmi.Path{Elem: vals[i].path.GetElem()[:vals[i].node]}
		nodeKey := schema.PathString(node)
		j := i + 1
		for j < len(vals) && vals[j].node == vals[i].node &&
			schema.PathString(&gnmi.Path{Elem: vals[j].path.GetElem()[:vals[j].node]}) == nodeKey {
			j++
		}
		tv, err := h.encodeNode(node, vals[i:j], enc)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", nodeKey, err)
		}
		notif.Update = append(notif.Update, &gnmi.Update{Path: rel(node), Val: tv})
		i = j
	}
	return notif, nil
}

func (h *Handler) encodeNode(node *gnmi.Path, vals []leafVal, enc gnmi.Encoding) (*gnmi.TypedValue, error) {
	if len(vals) == 1 && len(vals[0].path.GetElem()) == len(node.GetElem()) {
		return h.s.EncodeLeaf(vals[0].leaf, vals[0].val.TV, enc)
	}
	sv := make([]schema.Value, len(vals))
	for i, v := range vals {
		sv[i] = schema.Value{Path: v.path, Val: v.val.TV}
	}
	root, err := h.s.Build(sv)
	if err != nil {
		return nil, err
	}
	return h.s.EncodeNode(root, node, enc)
}

// responsePrefix echoes the request prefix (target included, gNMI
// 2.2.2.1). When the prefix holds wildcards only its origin and target are
// echoed and update paths are absolute.
func responsePrefix(s *schema.Schema, prefix *gnmi.Path) *gnmi.Path {
	if prefix == nil {
		return nil
	}
	out := &gnmi.Path{Origin: prefix.GetOrigin(), Target: prefix.GetTarget()}
	if len(prefix.GetElem()) > 0 {
		if res, err := s.Resolve(schema.Normalize(prefix)); err == nil && !res.Wildcard {
			out.Elem = prefix.GetElem()
		}
	}
	if out.Origin == "" && out.Target == "" && len(out.Elem) == 0 {
		return nil
	}
	return out
}

func dataTypeName(dt gnmi.GetRequest_DataType) string {
	switch dt {
	case gnmi.GetRequest_CONFIG:
		return "config "
	case gnmi.GetRequest_STATE:
		return "state "
	case gnmi.GetRequest_OPERATIONAL:
		return "operational "
	}
	return ""
}

// errCode maps an error of a context to its gRPC code.
func errCode(err error) codes.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}
