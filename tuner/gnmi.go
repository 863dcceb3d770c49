package tuner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lhcnp/lhcnp/gen/client/oc"
	"github.com/lhcnp/lhcnp/gen/client/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/tuner/policy"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/openconfig/ygnmi/ygnmi"
	"github.com/openconfig/ygot/ygot"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Change is one queue's new settings.
type Change struct {
	Interface string
	Queue     uint8
	Before    policy.Settings
	After     policy.Settings
}

// Pusher writes changes to switches under Commit Confirmed.
type Pusher interface {
	// Commit applies the changes of one switch in one Set, to be rolled
	// back by the switch unless confirmed within rollback.
	Commit(ctx context.Context, target, id string, changes []Change, rollback time.Duration) error
	// Confirm makes the commit id permanent; Cancel rolls it back now.
	Confirm(ctx context.Context, target, id string) error
	Cancel(ctx context.Context, target, id string) error
}

// GNMIPusher is the Pusher over gNMI: one gRPC connection per switch,
// opened on first use.
type GNMIPusher struct {
	switches map[string]SwitchConfig
	mu       sync.Mutex
	conns    map[string]*grpc.ClientConn
}

// NewGNMIPusher returns a pusher of the switches, by target name.
func NewGNMIPusher(switches []SwitchConfig) *GNMIPusher {
	p := &GNMIPusher{switches: map[string]SwitchConfig{}, conns: map[string]*grpc.ClientConn{}}
	for _, s := range switches {
		p.switches[s.Name] = s
	}
	return p
}

// Close closes every connection.
func (p *GNMIPusher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for name, c := range p.conns {
		errs = append(errs, c.Close())
		delete(p.conns, name)
	}
	return errors.Join(errs...)
}

func (p *GNMIPusher) client(target string) (gnmi.GNMIClient, SwitchConfig, error) {
	s, ok := p.switches[target]
	if !ok {
		return nil, s, fmt.Errorf("switch %q: not in the tuner's configuration", target)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[target]; ok {
		return gnmi.NewGNMIClient(c), s, nil
	}
	var creds credentials.TransportCredentials
	if s.Insecure {
		creds = insecure.NewCredentials()
	} else {
		tc, err := auth.ClientTLS(s.CAFile, s.CertFile, s.KeyFile, s.ServerName)
		if err != nil {
			return nil, s, fmt.Errorf("switch %q: %w", target, err)
		}
		tc.InsecureSkipVerify = s.SkipVerify
		creds = credentials.NewTLS(tc)
	}
	c, err := grpc.NewClient(s.Address, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, s, fmt.Errorf("switch %q at %s: %w", target, s.Address, err)
	}
	p.conns[target] = c
	return gnmi.NewGNMIClient(c), s, nil
}

func (p *GNMIPusher) outgoing(ctx context.Context, s SwitchConfig) context.Context {
	if s.Username == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, s.Username, auth.MetadataPassword, s.Password)
}

// withExtensions adds gNMI extensions to every SetRequest: ygnmi's
// SetBatch has no option for them.
type withExtensions struct {
	gnmi.GNMIClient
	ext []*gnmi_ext.Extension
}

func (c withExtensions) Set(ctx context.Context, req *gnmi.SetRequest, opts ...grpc.CallOption) (*gnmi.SetResponse, error) {
	req = proto.Clone(req).(*gnmi.SetRequest)
	req.Extension = append(req.Extension, c.ext...)
	return c.GNMIClient.Set(ctx, req, opts...)
}

func commitExt(id string, action any) *gnmi_ext.Extension {
	c := &gnmi_ext.Commit{Id: id}
	switch a := action.(type) {
	case *gnmi_ext.CommitRequest:
		c.Action = &gnmi_ext.Commit_Commit{Commit: a}
	case *gnmi_ext.CommitConfirm:
		c.Action = &gnmi_ext.Commit_Confirm{Confirm: a}
	case *gnmi_ext.CommitCancel:
		c.Action = &gnmi_ext.Commit_Cancel{Cancel: a}
	}
	return &gnmi_ext.Extension{Ext: &gnmi_ext.Extension_Commit{Commit: c}}
}

// ValidateChange checks the new settings against the generated model
// (ygot validation of the queue's GoStruct: ranges and types)
// and alpha's fraction digits, which ygot does not check: nothing the
// switch would refuse is pushed.
func ValidateChange(c Change) error {
	cfg := &oc.Lhcnp_Interface_Queue{Id: ygot.Uint8(c.Queue)}
	a := c.After
	switch a.KMaxMode {
	case policy.KMaxBDP:
		if policy.AlphaHasExtraDigits(a.Alpha) {
			return fmt.Errorf("interface %s queue %d: alpha %v has more than %d fraction digits", c.Interface, c.Queue,
				a.Alpha, policy.YANGAlphaFractionDigit)
		}
		if a.Alpha < policy.YANGAlphaMin || a.Alpha > policy.YANGAlphaMax {
			return fmt.Errorf("interface %s queue %d: alpha %v outside the model's range %v..%v", c.Interface, c.Queue,
				a.Alpha, policy.YANGAlphaMin, policy.YANGAlphaMax)
		}
		cfg.Alpha = ygot.Float64(a.Alpha)
	case policy.KMaxExplicit:
		if a.KMaxBytes < policy.YANGKMaxMinBytes {
			return fmt.Errorf("interface %s queue %d: kmax %d outside the model's range 1..max", c.Interface, c.Queue, a.KMaxBytes)
		}
		cfg.Kmax = ygot.Uint64(uint64(a.KMaxBytes))
		cfg.KmaxMode = oc.LhcnpTypes_KmaxMode_EXPLICIT
	default:
		return fmt.Errorf("interface %s queue %d: kmax-mode %q unknown", c.Interface, c.Queue, a.KMaxMode)
	}
	if a.VGrowthBytesPerSec < policy.YANGVGrowthMinBytesPerSec {
		return fmt.Errorf("interface %s queue %d: v-growth %d outside the model's range 1..max", c.Interface, c.Queue, a.VGrowthBytesPerSec)
	}
	cfg.VGrowth = ygot.Uint64(uint64(a.VGrowthBytesPerSec))
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("interface %s queue %d: %w", c.Interface, c.Queue, err)
	}
	return nil
}

// Commit implements Pusher: one Set of the changed leaves (alpha or
// kmax, v-growth, overload-cut) of every queue, with the Commit extension. The paths are
// gen/client's compressed ones (quicker to compile); on the wire they are
// the queue's config/ leaves, as with the uncompressed gen/oc/ocpath.
func (p *GNMIPusher) Commit(ctx context.Context, target, id string, changes []Change, rollback time.Duration) error {
	var errs []error
	for _, c := range changes {
		errs = append(errs, ValidateChange(c))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("switch %q: %w: %w", target, ErrNotPushed, err)
	}
	gc, s, err := p.client(target)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotPushed, err)
	}
	ext := commitExt(id, &gnmi_ext.CommitRequest{RollbackDuration: durationpb.New(rollback)})
	yc, err := ygnmi.NewClient(withExtensions{gc, []*gnmi_ext.Extension{ext}})
	if err != nil {
		return fmt.Errorf("switch %q: %w: %w", target, ErrNotPushed, err)
	}
	// The queues' configuration watched from before the check to after the
	// Set: another client's Set in between would be overwritten unseen.
	w, err := watchConfig(p.outgoing(ctx, s), gc, changes)
	if err != nil {
		return fmt.Errorf("switch %q: %w: watching its configuration: %w", target, ErrNotPushed, err)
	}
	defer w.close()
	if err := p.checkBefore(p.outgoing(ctx, s), gc, changes); err != nil {
		return fmt.Errorf("switch %q: %w: %w", target, ErrNotPushed, err)
	}
	b := &ygnmi.SetBatch{}
	for _, c := range changes {
		q := ocpath.Root().Lhcnp().Interface(c.Interface).Queue(c.Queue)
		switch {
		case c.After.KMaxMode == policy.KMaxExplicit:
			if c.Before.KMaxMode != policy.KMaxExplicit {
				ygnmi.BatchUpdate(b, q.KmaxMode().Config(), oc.LhcnpTypes_KmaxMode_EXPLICIT)
			}
			if c.After.KMaxBytes != c.Before.KMaxBytes {
				ygnmi.BatchUpdate(b, q.Kmax().Config(), uint64(c.After.KMaxBytes))
			}
		case c.After.Alpha != c.Before.Alpha:
			ygnmi.BatchUpdate(b, q.Alpha().Config(), c.After.Alpha)
		}
		if c.After.VGrowthBytesPerSec != c.Before.VGrowthBytesPerSec {
			ygnmi.BatchUpdate(b, q.VGrowth().Config(), uint64(c.After.VGrowthBytesPerSec))
		}
		if c.After.OverloadCut != c.Before.OverloadCut {
			// Rule pinned's option, on or off: an explicit value, so that
			// the switch's rollback restores the one of before.
			ygnmi.BatchUpdate(b, q.OverloadCut().Config(), c.After.OverloadCut)
		}
	}
	if _, err := b.Set(p.outgoing(ctx, s), yc); err != nil {
		return fmt.Errorf("switch %q: set: %w", target, err)
	}
	if f := w.foreign(changes); f != "" {
		// The commit replaced another client's value: cancelled, the
		// switch restores the configuration of before the commit, which
		// has it.
		if err := p.Cancel(ctx, target, id); err != nil {
			return fmt.Errorf("switch %q: %w (%s); commit %s: %w, the switch rolls it back at its deadline: %w",
				target, ErrOperatorSet, f, id, ErrCancelFailed, err)
		}
		return fmt.Errorf("switch %q: %w (%s): commit %s cancelled, the other client's value stands", target, ErrOperatorSet, f, id)
	}
	return nil
}

// ErrNotPushed is wrapped by Commit's error when it failed before its Set
// was sent (a change the model refuses, the switch's settings unreadable or
// not the decision's before): the switch has nothing to roll back, however
// the failure looks (a Get past switch_timeout is DEADLINE_EXCEEDED, as a
// Set whose answer was lost is).
var ErrNotPushed = errors.New("not pushed")

// ErrNotBefore is wrapped by Commit's error when a queue of the switch
// does not run the settings the change was decided on.
var ErrNotBefore = errors.New("the switch does not run the settings the decision was taken on")

// checkBefore reads each changed queue's settings from the switch (its
// state, where the switch shows what it runs) and refuses the changes
// unless every queue runs its Change.Before. A decision is taken on stored
// telemetry, which can be behind the switch (the collector stopped or
// lagging, a commit cancelled or rolled back since): pushed anyway, the
// audit trail would record a before the switch never had, and the switch
// would roll back to settings that differ from it. What another client
// sets between this Get and the Set is not seen (gNMI has no conditional
// Set); a pending commit of anyone makes the Set fail.
//
// One Get of every changed queue's state, PROTO-encoded: a ygnmi Get per
// queue had the switch build and the tuner parse a JSON subtree each time,
// and a commit of 24 queues (the start decides them all) took longer than
// switch_timeout on a loaded machine (some 60 ms a queue under -race), so
// that it was never sent; a PROTO Get of 8 queues takes the time of one.
func (p *GNMIPusher) checkBefore(ctx context.Context, gc gnmi.GNMIClient, changes []Change) error {
	req := &gnmi.GetRequest{Encoding: gnmi.Encoding_PROTO, Type: gnmi.GetRequest_STATE}
	for _, c := range changes {
		req.Path = append(req.Path, &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
			{Name: "interface", Key: map[string]string{"name": c.Interface}}, {Name: "queues"},
			{Name: "queue", Key: map[string]string{"id": strconv.Itoa(int(c.Queue))}}, {Name: "state"}}})
	}
	resp, err := gc.Get(ctx, req)
	if err != nil {
		return fmt.Errorf("reading the queues' settings: %w", err)
	}
	type queueKey struct {
		iface string
		id    string
	}
	runs := map[queueKey]*policy.Settings{}
	for _, n := range resp.GetNotification() {
		for _, u := range n.GetUpdate() {
			elems := append(append([]*gnmi.PathElem(nil), n.GetPrefix().GetElem()...), u.GetPath().GetElem()...)
			if len(elems) != 7 || elems[2].GetName() != "interface" || elems[4].GetName() != "queue" {
				continue
			}
			k := queueKey{elems[2].GetKey()["name"], elems[4].GetKey()["id"]}
			r := runs[k]
			if r == nil {
				r = &policy.Settings{KMaxMode: policy.KMaxBDP}
				runs[k] = r
			}
			if err := setLeaf(r, elems[6].GetName(), u.GetVal()); err != nil {
				return fmt.Errorf("interface %s queue %s: reading its settings: %w", k.iface, k.id, err)
			}
		}
	}
	var errs []error
	for _, c := range changes {
		r := runs[queueKey{c.Interface, strconv.Itoa(int(c.Queue))}]
		if r == nil {
			errs = append(errs, fmt.Errorf("interface %s queue %d: reading its settings: the switch has none", c.Interface, c.Queue))
			continue
		}
		if r.KMaxMode != policy.KMaxExplicit {
			r.KMaxBytes = 0 // kmax counts in EXPLICIT mode only, as the window's
		}
		if d := settingsDiff(c.Before, *r); d != "" {
			errs = append(errs, fmt.Errorf("%w: interface %s queue %d: %s (telemetry behind the switch)", ErrNotBefore, c.Interface, c.Queue, d))
		}
	}
	return errors.Join(errs...)
}

// setLeaf sets the setting a queue's state leaf name shows from its value
// (PROTO: decimal64 as a double, enumerations as their names); other
// leaves are ignored.
func setLeaf(r *policy.Settings, name string, v *gnmi.TypedValue) error {
	bad := func() error { return fmt.Errorf("%s: unexpected value %v", name, v) }
	switch name {
	case "alpha":
		switch x := v.GetValue().(type) {
		case *gnmi.TypedValue_DoubleVal:
			r.Alpha = x.DoubleVal
		case *gnmi.TypedValue_FloatVal:
			r.Alpha = float64(x.FloatVal)
		case *gnmi.TypedValue_DecimalVal:
			r.Alpha = float64(x.DecimalVal.GetDigits()) / math.Pow10(int(x.DecimalVal.GetPrecision()))
		default:
			return bad()
		}
	case "kmax-mode":
		s := v.GetStringVal()
		if i := strings.IndexByte(s, ':'); i >= 0 {
			s = s[i+1:]
		}
		if s == oc.LhcnpTypes_KmaxMode_EXPLICIT.String() {
			r.KMaxMode = policy.KMaxExplicit
		}
	case "kmax", "v-growth":
		u, ok := v.GetValue().(*gnmi.TypedValue_UintVal)
		if !ok {
			return bad()
		}
		if name == "kmax" {
			r.KMaxBytes = int64(u.UintVal)
		} else {
			r.VGrowthBytesPerSec = int64(u.UintVal)
		}
	case "overload-cut":
		b, ok := v.GetValue().(*gnmi.TypedValue_BoolVal)
		if !ok {
			return bad()
		}
		r.OverloadCut = b.BoolVal
	}
	return nil
}

// settingsDiff names the settings a queue runs that differ from want, ""
// when none does; only the settings of the queue's mode count (alpha in
// BDP_ADAPTIVE mode, kmax in EXPLICIT mode), and v-growth and overload-cut.
func settingsDiff(want, runs policy.Settings) string {
	var d []string
	if runs.KMaxMode != want.KMaxMode {
		d = append(d, fmt.Sprintf("kmax-mode %s, decided on %s", runs.KMaxMode, want.KMaxMode))
	} else if runs.KMaxMode == policy.KMaxExplicit && runs.KMaxBytes != want.KMaxBytes {
		d = append(d, fmt.Sprintf("kmax %d, decided on %d", runs.KMaxBytes, want.KMaxBytes))
	} else if runs.KMaxMode == policy.KMaxBDP && runs.Alpha != want.Alpha {
		d = append(d, fmt.Sprintf("alpha %v, decided on %v", runs.Alpha, want.Alpha))
	}
	if runs.VGrowthBytesPerSec != want.VGrowthBytesPerSec {
		d = append(d, fmt.Sprintf("v-growth %d, decided on %d", runs.VGrowthBytesPerSec, want.VGrowthBytesPerSec))
	}
	if runs.OverloadCut != want.OverloadCut {
		// A switch without the option shows it off, as the window does.
		d = append(d, fmt.Sprintf("overload-cut %v, decided on %v", runs.OverloadCut, want.OverloadCut))
	}
	if len(d) == 0 {
		return ""
	}
	return "it runs " + strings.Join(d, ", ")
}

// Confirm implements Pusher.
func (p *GNMIPusher) Confirm(ctx context.Context, target, id string) error {
	return p.commitAction(ctx, target, id, &gnmi_ext.CommitConfirm{})
}

// Cancel implements Pusher.
func (p *GNMIPusher) Cancel(ctx context.Context, target, id string) error {
	return p.commitAction(ctx, target, id, &gnmi_ext.CommitCancel{})
}

func (p *GNMIPusher) commitAction(ctx context.Context, target, id string, action any) error {
	gc, s, err := p.client(target)
	if err != nil {
		return err
	}
	req := &gnmi.SetRequest{Extension: []*gnmi_ext.Extension{commitExt(id, action)}}
	if _, err := gc.Set(p.outgoing(ctx, s), req); err != nil {
		return fmt.Errorf("switch %q: commit %s: %w", target, id, err)
	}
	return nil
}
