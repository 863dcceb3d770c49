package service_test

import (
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"golang.org/x/crypto/bcrypt"
)

// TestCredentialsRefused: a switch's target with users refuses every RPC,
// Subscribe in each mode, without valid credentials, and checks them before
// it reads a unary request (servicetest.CheckRefusals).
func TestCredentialsRefused(t *testing.T) {
	e := newEnv(t)
	h, err := auth.HashPassword("noc-secret", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := auth.NewUsers(auth.User{Name: "noc", Role: auth.ReadWrite, Hash: []byte(h)})
	sub := subscribe.New(e.st, append([]subscribe.Option{subscribe.WithClock(e.clk)}, service.SubscribeOptions(testSchema)...)...)
	srv, err := service.New(service.WithInsecure(), service.WithAuth(auth.New(users)),
		service.WithCapabilities(e.h), service.WithGet(e.h), service.WithSet(e.h), service.WithSubscribe(sub))
	if err != nil {
		t.Fatal(err)
	}
	servicetest.CheckRefusals(t, servicetest.Serve(t, srv), "noc", nil)
}
