package main

import (
	"context"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestInteropYgnmiModes drives the switch with ygnmi on the generated paths
// (gen/oc/ocpath) in every mode ygnmi has: Get over ONCE and over Get,
// wildcard GetAll, Watch over STREAM ON_CHANGE and TARGET_DEFINED, SAMPLE,
// JSON_IETF and PROTO values, Set in JSON_IETF (its default) and in PROTO
// scalars (TestInteropYgnmi covers leaves, containers, Delete and errors).
func TestInteropYgnmiModes(t *testing.T) {
	c, ctx, q := ygnmiSetup(t, startSwitch(t).addr)

	t.Run("GetAll with wildcards", func(t *testing.T) {
		all, err := ygnmi.GetAll(ctx, c, ocpath.Root().Lhcnp().Interfaces().InterfaceAny().Queues().QueueAny().State().EffectiveKmax())
		if err != nil || len(all) < 8 {
			t.Errorf("GetAll effective-kmax: %d values, %v; want one per queue of every interface", len(all), err)
		}
	})
	t.Run("Get in JSON_IETF and PROTO", func(t *testing.T) {
		// (ygnmi does not decode the JSON encoding.)
		for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_PROTO} {
			v, err := ygnmi.Get(ctx, c, q.State().VGrowth(), ygnmi.WithEncoding(enc))
			if err != nil || v != 1_250_000_000 {
				t.Errorf("Get v-growth in %v = %d, %v; want 1250000000", enc, v, err)
			}
		}
	})
	t.Run("Update in PROTO scalars and in JSON_IETF", func(t *testing.T) {
		if _, err := ygnmi.Update(ctx, c, q.Config().Alpha(), 0.5, ygnmi.WithSetPreferProtoEncoding()); err != nil {
			t.Fatal(err)
		}
		if v, err := ygnmi.Get(ctx, c, q.State().EffectiveKmax()); err != nil || v != 6_250_000 {
			t.Errorf("effective-kmax after a PROTO Set of alpha 0.5 = %d, %v", v, err)
		}
		cfg := &oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_Config{Id: ygnmiPtr(uint8(0)), Alpha: ygnmiPtr(0.25)}
		if _, err := ygnmi.Update(ctx, c, q.Config(), cfg); err != nil {
			t.Fatal(err)
		}
		if v, err := ygnmi.Get(ctx, c, q.State().EffectiveKmax()); err != nil || v != 3_125_000 {
			t.Errorf("effective-kmax after a JSON_IETF Set of alpha 0.25 = %d, %v", v, err)
		}
	})
	t.Run("Watch ON_CHANGE and TARGET_DEFINED", func(t *testing.T) {
		for i, mode := range []gnmi.SubscriptionMode{gnmi.SubscriptionMode_ON_CHANGE, gnmi.SubscriptionMode_TARGET_DEFINED} {
			want := []float64{0.75, 0.5}[i]
			first := make(chan struct{})
			seen := 0
			w := ygnmi.Watch(ctx, c, q.State().Alpha(), func(v *ygnmi.Value[float64]) error {
				if seen++; seen == 1 {
					close(first)
				}
				if a, ok := v.Val(); ok && a == want {
					return nil
				}
				return ygnmi.Continue
			}, ygnmi.WithSubscriptionMode(mode))
			// Change the value once the watch has its initial one.
			select {
			case <-first:
			case <-ctx.Done():
				t.Fatalf("Watch %v: no initial value", mode)
			}
			if _, err := ygnmi.Replace(ctx, c, q.Config().Alpha(), want); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Await(); err != nil {
				t.Errorf("Watch %v: %v", mode, err)
			}
		}
	})
	t.Run("SAMPLE", func(t *testing.T) {
		n := 0
		w := ygnmi.Watch(ctx, c, q.State().Counters().Packets(), func(v *ygnmi.Value[uint64]) error {
			if n++; n == 3 {
				return nil
			}
			return ygnmi.Continue
		}, ygnmi.WithSubscriptionMode(gnmi.SubscriptionMode_SAMPLE), ygnmi.WithSampleInterval(100*time.Millisecond))
		if _, err := w.Await(); err != nil {
			t.Errorf("SAMPLE: %d samples, %v", n, err)
		}
	})
}

// ygnmiSetup returns a ygnmi client of the switch at addr (prefix target
// n1), a test context and the path of queue 0 of wan0.
func ygnmiSetup(t *testing.T, addr string) (*ygnmi.Client, context.Context, *ocpath.Lhcnp_Lhcnp_Interfaces_Interface_Queues_QueuePath) {
	t.Helper()
	c, err := ygnmi.NewClient(gnmi.NewGNMIClient(dialGNMI(t, addr)), ygnmi.WithTarget("n1"))
	if err != nil {
		t.Fatal(err)
	}
	return c, testCtx(t), ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0)
}

// commitInterceptor is how a ygnmi client (which has no option for gNMI
// extensions) sends a confirmed commit: a gRPC client interceptor adds the
// Commit extension to the SetRequest ygnmi builds.
func commitInterceptor(ext func() *gnmi_ext.Commit) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if sr, ok := req.(*gnmi.SetRequest); ok {
			if c := ext(); c != nil {
				sr.Extension = append(sr.Extension, &gnmi_ext.Extension{Ext: &gnmi_ext.Extension_Commit{Commit: c}})
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// TestInteropYgnmiCommitConfirmed: a ygnmi Replace sent as a confirmed
// commit is applied, and confirmed with a bare SetRequest; the next one,
// cancelled, is rolled back (what the tuner of issue 10 does).
func TestInteropYgnmiCommitConfirmed(t *testing.T) {
	r := startSwitch(t)
	var next *gnmi_ext.Commit
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(commitInterceptor(func() *gnmi_ext.Commit { return next })))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw := gnmi.NewGNMIClient(conn)
	c, err := ygnmi.NewClient(raw, ygnmi.WithTarget("n1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	q := ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0)
	kmax := func() uint64 {
		t.Helper()
		v, err := ygnmi.Get(ctx, c, q.State().EffectiveKmax())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	action := func(id string, a string) *gnmi_ext.Commit {
		switch a {
		case "confirm":
			return &gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Confirm{Confirm: &gnmi_ext.CommitConfirm{}}}
		case "cancel":
			return &gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Cancel{Cancel: &gnmi_ext.CommitCancel{}}}
		}
		return &gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Commit{Commit: &gnmi_ext.CommitRequest{RollbackDuration: durationpb.New(time.Minute)}}}
	}

	next = action("t1", "commit")
	if _, err := ygnmi.Replace(ctx, c, q.Config().Alpha(), 0.5); err != nil {
		t.Fatal(err)
	}
	next = nil
	if got := kmax(); got != 6_250_000 {
		t.Errorf("effective-kmax during the commit %d, want 6250000", got)
	}
	next = action("t1", "confirm")
	if _, err := raw.Set(ctx, &gnmi.SetRequest{}); err != nil {
		t.Fatal(err)
	}
	next = action("t2", "commit")
	if _, err := ygnmi.Replace(ctx, c, q.Config().Alpha(), 0.25); err != nil {
		t.Fatal(err)
	}
	next = action("t2", "cancel")
	if _, err := raw.Set(ctx, &gnmi.SetRequest{}); err != nil {
		t.Fatal(err)
	}
	next = nil
	if got := kmax(); got != 6_250_000 {
		t.Errorf("effective-kmax after confirming t1 and cancelling t2 %d, want 6250000", got)
	}
}
