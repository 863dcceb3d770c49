package tuner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/internal/plural"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// ErrOperatorSet is wrapped by Commit's error when another client's Set
// landed between the tuner's check of the queue's settings and its own
// Set: the commit would have overwritten it, so the tuner cancelled it and
// the switch runs the other client's value again.
var ErrOperatorSet = errors.New("another client set the queue while the tuner's Set was on its way")

// ErrCancelFailed is wrapped by Commit's error, with ErrOperatorSet, when
// the cancel of a commit that overwrote another client's Set failed: the
// commit is pending on the switch, the other client's value overwritten,
// until a cancel succeeds or the switch's deadline rolls it back. The
// tuner tries the cancel again every period.
var ErrCancelFailed = errors.New("cancelling the commit failed")

// awaitOwnSet bounds how long Commit waits for the switch's configuration
// stream to show the tuner's own Set (milliseconds on a live switch).
const awaitOwnSet = 2 * time.Second

// configWatch is an ON_CHANGE subscription to the configuration of the
// queues a commit changes, opened before the tuner checks their settings
// and read until the switch shows the tuner's Set: every value in between
// is in order, so a value that is neither the one the decision was taken
// on nor the tuner's is another client's Set that the commit overwrote.
// gNMI has no conditional Set; this is the next best thing.
type configWatch struct {
	stream gnmi.GNMI_SubscribeClient
	cancel context.CancelFunc
}

// watchConfig subscribes to the config leaves of every changed queue and
// waits for the initial sync. A switch without Subscribe returns nil, nil:
// the tuner then relies on its check of the settings alone.
func watchConfig(ctx context.Context, gc gnmi.GNMIClient, changes []Change) (*configWatch, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := gc.Subscribe(sctx)
	if err != nil {
		cancel()
		return nil, err
	}
	sl := &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_PROTO}
	for _, c := range changes {
		sl.Subscription = append(sl.Subscription, &gnmi.Subscription{Mode: gnmi.SubscriptionMode_ON_CHANGE, Path: &gnmi.Path{Elem: []*gnmi.PathElem{
			{Name: "lhcnp"}, {Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": c.Interface}},
			{Name: "queues"}, {Name: "queue", Key: map[string]string{"id": strconv.Itoa(int(c.Queue))}}, {Name: "config"}}}})
	}
	if err := stream.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: sl}}); err != nil {
		cancel()
		return nil, unimplemented(err)
	}
	for {
		r, err := stream.Recv()
		if err != nil {
			cancel()
			return nil, unimplemented(err)
		}
		if r.GetSyncResponse() {
			return &configWatch{stream: stream, cancel: cancel}, nil
		}
	}
}

// unimplemented is nil for a switch that does not serve Subscribe.
func unimplemented(err error) error {
	if status.Code(err) == codes.Unimplemented || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func (w *configWatch) close() {
	if w != nil {
		w.cancel()
	}
}

// foreign reads the stream until every leaf the changes set shows its new
// value, and names the values in between that are neither the leaf's
// value before nor after, and the updates that replaced a value the switch
// had not sent yet (Update.duplicates): another client's Set. A stream that does not show
// the tuner's Set within awaitOwnSet says nothing ("").
func (w *configWatch) foreign(changes []Change) string {
	if w == nil {
		return "" // the switch serves no Subscribe
	}
	type leafKey struct {
		iface string
		queue uint8
		leaf  string
	}
	ours := map[leafKey][2]string{} // before, after
	pending := map[leafKey]bool{}
	for _, c := range changes {
		before, after := leafValues(c.Before), leafValues(c.After)
		for leaf := range before {
			if _, ok := after[leaf]; !ok {
				after[leaf] = before[leaf] // a leaf of the other mode: not set
			}
		}
		for leaf, v := range after {
			k := leafKey{c.Interface, c.Queue, leaf}
			b, ok := before[leaf]
			if !ok {
				b = v
			}
			ours[k] = [2]string{b, v}
			if b != v {
				pending[k] = true
			}
		}
	}
	got := make(chan *gnmi.SubscribeResponse)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			r, err := w.stream.Recv()
			if err != nil {
				close(got)
				return
			}
			select {
			case got <- r:
			case <-done:
				return
			}
		}
	}()
	timeout := time.NewTimer(awaitOwnSet)
	defer timeout.Stop()
	var seen []string
	for len(pending) > 0 {
		var r *gnmi.SubscribeResponse
		var ok bool
		select {
		case r, ok = <-got:
			if !ok {
				return ""
			}
		case <-timeout.C:
			return ""
		}
		n := r.GetUpdate()
		for _, u := range n.GetUpdate() {
			p := append(append([]*gnmi.PathElem(nil), n.GetPrefix().GetElem()...), u.GetPath().GetElem()...)
			if len(p) == 0 {
				continue
			}
			// The keys are read from the interface and queue elements by
			// name: the leaf's parent is config, not the queue (taken for
			// it, every update read as queue 0's, and a commit of another
			// queue waited out awaitOwnSet, blind to other clients' Sets).
			var iface, qid string
			for _, e := range p {
				switch e.GetName() {
				case "interface":
					iface = e.GetKey()["name"]
				case "queue":
					qid = e.GetKey()["id"]
				}
			}
			id, err := strconv.ParseUint(qid, 10, 8)
			if err != nil {
				continue
			}
			k := leafKey{iface, uint8(id), p[len(p)-1].GetName()}
			want, tuned := ours[k]
			if !tuned {
				continue
			}
			v := valueString(u.GetVal())
			if d := u.GetDuplicates(); d > 0 {
				// The switch replaced d values of the leaf while they
				// waited to be sent (its ON_CHANGE queue keeps one
				// value per leaf): the tuner's Set changes a leaf once
				// since the watch's sync, so at least one of them was
				// another client's, whatever its value was.
				seen = append(seen, fmt.Sprintf("interface %s queue %d: %s (%s replaced by a later value before the switch sent it)",
					k.iface, k.queue, k.leaf, plural.Count(int(d), "value")))
			}
			switch v {
			case want[1]:
				delete(pending, k)
			case want[0]:
			default:
				seen = append(seen, fmt.Sprintf("interface %s queue %d: %s %s", k.iface, k.queue, k.leaf, v))
			}
		}
	}
	return strings.Join(seen, ", ")
}

// leafValues are the config leaves of s the tuner sets, as valueString
// writes them.
func leafValues(s policy.Settings) map[string]string {
	m := map[string]string{"v-growth": strconv.FormatInt(s.VGrowthBytesPerSec, 10), "overload-cut": strconv.FormatBool(s.OverloadCut)}
	if s.KMaxMode == policy.KMaxExplicit {
		m["kmax-mode"], m["kmax"] = string(policy.KMaxExplicit), strconv.FormatInt(s.KMaxBytes, 10)
	} else {
		m["alpha"] = strconv.FormatFloat(s.Alpha, 'g', -1, 64)
	}
	return m
}

// valueString writes a leaf's value for comparison with leafValues: numbers
// in Go's shortest form, booleans as true/false, an enum's name without its
// module.
func valueString(v *gnmi.TypedValue) string {
	switch x := v.GetValue().(type) {
	case *gnmi.TypedValue_DoubleVal:
		return strconv.FormatFloat(x.DoubleVal, 'g', -1, 64)
	case *gnmi.TypedValue_FloatVal:
		return strconv.FormatFloat(float64(x.FloatVal), 'g', -1, 64)
	case *gnmi.TypedValue_DecimalVal:
		f := float64(x.DecimalVal.GetDigits())
		for range x.DecimalVal.GetPrecision() {
			f /= 10
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case *gnmi.TypedValue_UintVal:
		return strconv.FormatUint(x.UintVal, 10)
	case *gnmi.TypedValue_IntVal:
		return strconv.FormatInt(x.IntVal, 10)
	case *gnmi.TypedValue_BoolVal:
		return strconv.FormatBool(x.BoolVal)
	case *gnmi.TypedValue_StringVal:
		s := x.StringVal
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			s = s[i+1:]
		}
		return s
	}
	return v.String()
}
