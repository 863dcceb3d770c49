package schema

import (
	"testing"

	"github.com/lhcnp/lhcnp/server/store"
)

// FuzzResolve: any path a client can send is resolved against the schema or
// rejected with an error; it never panics.
func FuzzResolve(f *testing.F) {
	s, err := New()
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{"/", "/lhcnp", "/lhcnp/interfaces/interface[name=eth0]/queues/queue[id=3]/config/alpha",
		"/lhcnp/interfaces/interface[name=*]/queues/queue[id=*]/state/counters", "/lhcnp/.../state",
		"/lhcnp/flow-table/flows/flow[source-address=10.0.0.1]", "/lhcnp/interfaces/interface[bogus=1]",
		"/nope", "/lhcnp/interfaces/interface[name=eth0]/queues/queue[id=x]/config"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := store.ParsePath(in)
		if err != nil {
			return
		}
		_, _ = s.Resolve(p)
	})
}
