package service_test

import (
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// subscribeClient serves e's handler beside a Subscribe server over e's
// store, built with the options server/fabric gives a switch's.
func subscribeClient(t *testing.T, e *env) gnmi.GNMIClient {
	t.Helper()
	sub := subscribe.New(e.st, append([]subscribe.Option{subscribe.WithClock(e.clk)}, service.SubscribeOptions(testSchema)...)...)
	srv, err := service.New(service.WithInsecure(), service.WithGet(e.h), service.WithSet(e.h), service.WithSubscribe(sub))
	if err != nil {
		t.Fatal(err)
	}
	return servicetest.Client(t, srv)
}

// subscribeOnce sends a ONCE list and returns the updates it answers as
// "path = value" lines, or the error that ends the stream.
func subscribeOnce(t *testing.T, c gnmi.GNMIClient, sl *gnmi.SubscriptionList) ([]string, error) {
	t.Helper()
	sc, err := c.Subscribe(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: sl}}); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	var out []string
	for {
		r, err := sc.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		n := r.GetUpdate()
		for _, u := range n.GetUpdate() {
			out = append(out, schema.PathString(schema.Join(n.GetPrefix(), u.GetPath()))+" = "+valString(u.GetVal()))
		}
	}
}

// TestSubscribeUseModels: gNMI 2.6 and 3.5.1.2 say that with use_models "the
// target MUST only consider data elements within the defined set of schema
// models". Subscribe refuses a list naming a model the target does not
// serve as Get does (INVALID_ARGUMENT, the same message), and answers one
// naming a served model. It ignored use_models, answering lhcnp data to a
// list that named only openconfig-interfaces: this failed before.
func TestSubscribeUseModels(t *testing.T) {
	e := newEnv(t)
	c := subscribeClient(t, e)
	path := mustPath(q3 + "/config/alpha")
	for _, tt := range []struct {
		desc   string
		models []*gnmi.ModelData
		want   []string // nil: refused as Get refuses it
	}{
		{desc: "a model not served", models: []*gnmi.ModelData{{Name: "openconfig-interfaces"}}},
		{desc: "a served model at another version", models: []*gnmi.ModelData{{Name: schema.ModuleName, Version: "2020-01-01"}}},
		{desc: "a served model and one not served", models: []*gnmi.ModelData{{Name: schema.ModuleName}, {Name: "openconfig-interfaces"}}},
		{desc: "a served model", models: []*gnmi.ModelData{{Name: schema.ModuleName}}, want: []string{q3 + "/config/alpha = double 1"}},
		{desc: "a served model at its version", models: []*gnmi.ModelData{{Name: schema.ModuleName, Version: schema.Revision}},
			want: []string{q3 + "/config/alpha = double 1"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := subscribeOnce(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_PROTO,
				UseModels: tt.models, Subscription: []*gnmi.Subscription{{Path: path}}})
			_, getErr := e.c.Get(ctx(t), &gnmi.GetRequest{Encoding: gnmi.Encoding_PROTO, UseModels: tt.models, Path: []*gnmi.Path{path}})
			if tt.want == nil {
				if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != status.Convert(getErr).Message() {
					t.Errorf("Subscribe: %v (answered %q), want INVALID_ARGUMENT as Get gives: %v", err, got, getErr)
				}
				return
			}
			if err != nil || getErr != nil {
				t.Fatalf("Subscribe: %v, Get: %v, want both answered", err, getErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Subscribe (-want, +got):\n%s", diff)
			}
		})
	}
}
