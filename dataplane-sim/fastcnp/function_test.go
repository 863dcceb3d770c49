package fastcnp

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// TestSwitchesShareHosts: two switches of one network whose management
// each creates a Function, as two gNMI targets in one process do (the
// lab's switches): each puts a receiver on every host. A Fast CNP from
// either switch reaches the sender and cuts its rate whichever function
// was created first, and only that switch's receivers count it; a switch
// with border filtering alone (Fast CNP off) changes nothing for the
// other's. A Fast CNP no receiver accepts never reaches DCQCN (its BTH
// names flow a's sending QP, which a plain CNP would cut): it is dropped
// and counted once, by the receivers of the first switch created with
// Fast CNP on, else by the first switch's. The receivers created last
// took every Fast CNP before, counting the other switch's as untrusted
// (or as discarded, Fast CNP off there), and this test failed.
func TestSwitchesShareHosts(t *testing.T) {
	const on, border = "on", "border only"
	type fn struct{ sw, mode string }
	rogue := netip.MustParseAddr("2001:db8:9::9")
	tests := []struct {
		desc  string
		funcs []fn   // in the order their management created them
		from  string // the switch the Fast CNP comes from; "": a rogue source
		qp    uint32 // its BTH destination QP
		cut   bool   // flow a's sender takes it as a CNP
		want  map[string]ReceiverCounters
	}{
		{desc: "the first switch's, both on", funcs: []fn{{"n1", on}, {"n2", on}}, from: "n1", qp: 200, cut: true,
			want: map[string]ReceiverCounters{"n1": {Accepted: 1}, "n2": {}}},
		{desc: "the second switch's, both on", funcs: []fn{{"n1", on}, {"n2", on}}, from: "n2", qp: 200, cut: true,
			want: map[string]ReceiverCounters{"n1": {}, "n2": {Accepted: 1}}},
		{desc: "beside a border-only switch created later", funcs: []fn{{"n1", on}, {"n2", border}}, from: "n1", qp: 200, cut: true,
			want: map[string]ReceiverCounters{"n1": {Accepted: 1}, "n2": {}}},
		{desc: "beside a border-only switch created first", funcs: []fn{{"n2", border}, {"n1", on}}, from: "n1", qp: 200, cut: true,
			want: map[string]ReceiverCounters{"n1": {Accepted: 1}, "n2": {}}},
		{desc: "trusted by none: untrusted at the first switch on", funcs: []fn{{"n1", on}, {"n2", on}}, qp: 100,
			want: map[string]ReceiverCounters{"n1": {Untrusted: 1}, "n2": {}}},
		{desc: "trusted by none, the first switch border-only", funcs: []fn{{"n2", border}, {"n1", on}}, qp: 100,
			want: map[string]ReceiverCounters{"n1": {Untrusted: 1}, "n2": {}}},
		{desc: "every switch border-only: discarded at the first", funcs: []fn{{"n1", border}, {"n2", border}}, from: "n2", qp: 100,
			want: map[string]ReceiverCounters{"n1": {Discarded: 1}, "n2": {}}},
		{desc: "a known QP that is not the named one", funcs: []fn{{"n1", on}, {"n2", on}}, from: "n2", qp: 100,
			want: map[string]ReceiverCounters{"n1": {}, "n2": {NoQP: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t, rigOpts{dcqcn: true})
			switches := map[string]*netsim.Switch{"n1": r.n1, "n2": r.net.NodeByName("n2").(*netsim.Switch)}
			for _, h := range []*netsim.Host{r.s1, r.s2} {
				h.SetControlHandler(nil) // the functions' receivers alone, DCQCN behind them
			}
			funcs := map[string]*Function{}
			for _, x := range tt.funcs {
				sw := switches[x.sw]
				lh, err := lhcnp.Attach(r.net, sw, lhcnp.DefaultConfig())
				if err != nil {
					t.Fatal(err)
				}
				f, err := NewFunction(lh)
				if err != nil {
					t.Fatal(err)
				}
				cfg := *enabled()
				cfg.SourceAddress = netip.Addr{} // the switch's own address
				if x.mode == border {
					cfg.Enabled, cfg.BorderPorts = false, []string{sw.Ports()[0].Name()}
				}
				if err := f.Configure(cfg, lhcnp.DefaultConfig()); err != nil {
					t.Fatal(err)
				}
				funcs[x.sw] = f
			}
			r.sim.Run(engine.Millisecond) // connected
			src := rogue
			if tt.from != "" {
				src = switches[tt.from].Addr()
			}
			// What the switch's receivers counted (n1 has been sending
			// Fast CNPs since the start: the difference is this one's).
			counted := func() map[string]ReceiverCounters {
				out := map[string]ReceiverCounters{}
				for name, f := range funcs {
					c := f.Counters()
					out[name] = ReceiverCounters{Accepted: c["rnic_accepted"], Discarded: c["rnic_discarded"],
						Untrusted: c["rnic_untrusted"], NoQP: c["rnic_no_qp"]}
				}
				return out
			}
			before, cnps := counted(), r.a.Sender.CNPs()
			r.s1.Receive(fastCNP(t, r, src, addrS1, addrR1, tt.qp), nil)
			if got := r.a.Sender.CNPs() > cnps; got != tt.cut {
				t.Errorf("flow a took a CNP: %v, want %v", got, tt.cut)
			}
			got := counted()
			for name, c := range got {
				b := before[name]
				got[name] = ReceiverCounters{Accepted: c.Accepted - b.Accepted, Discarded: c.Discarded - b.Discarded,
					Untrusted: c.Untrusted - b.Untrusted, NoQP: c.NoQP - b.NoQP}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("each switch's receivers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigureIsAllOrNothing: a configuration the Function validates is
// one its Configure takes, the node and every receiver (no receiver can
// refuse it: the access list holds valid addresses only, a zoned source
// address among them); one it refuses, at the node's check (Validate,
// an unknown border port) or the node's Long-haul CNP configuration
// (with Fast CNP off), changes neither the node nor the receivers.
func TestConfigureIsAllOrNothing(t *testing.T) {
	r := newRig(t, rigOpts{})
	lh, err := lhcnp.Attach(r.net, r.n1, lhcnp.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFunction(lh)
	if err != nil {
		t.Fatal(err)
	}
	badLC := lhcnp.DefaultConfig()
	badLC.CNPPrio = netsim.NumPrio
	with := func(edit func(c *Config)) Config {
		c := *enabled()
		edit(&c)
		return c
	}
	tests := []struct {
		desc   string
		cfg    Config
		lc     lhcnp.Config
		refuse string // in the error; "": taken
	}{
		{desc: "on", cfg: *enabled(), lc: lhcnp.DefaultConfig()},
		{desc: "on, the switch's own address", cfg: with(func(c *Config) { c.SourceAddress = netip.Addr{} }), lc: lhcnp.DefaultConfig()},
		{desc: "on, a zoned source address", cfg: with(func(c *Config) { c.SourceAddress = netip.MustParseAddr("2001:db8:9::9%eth0") }),
			lc: lhcnp.DefaultConfig()},
		{desc: "off, an IPv4 source address", cfg: with(func(c *Config) { c.Enabled, c.SourceAddress = false, netip.MustParseAddr("10.0.9.9") }),
			lc: lhcnp.DefaultConfig()},
		{desc: "border only", cfg: with(func(c *Config) { c.Enabled, c.BorderPorts = false, []string{r.out.Name()} }), lc: lhcnp.DefaultConfig()},
		{desc: "on, an IPv4 source address", cfg: with(func(c *Config) { c.SourceAddress = netip.MustParseAddr("10.0.9.9") }),
			lc: lhcnp.DefaultConfig(), refuse: "source-address"},
		{desc: "an unknown border port", cfg: with(func(c *Config) { c.BorderPorts = []string{"nope"} }),
			lc: lhcnp.DefaultConfig(), refuse: "nope"},
		{desc: "off, the node's configuration refused", cfg: with(func(c *Config) { c.Enabled = false }), lc: badLC, refuse: "cnp-prio"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			// Each from the same start: on, with the rig's loopback.
			if err := f.Configure(*enabled(), lhcnp.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
			node, lhc := f.node.Config(), lh.Config()
			var recvs []ReceiverConfig
			for _, rv := range f.recvs {
				recvs = append(recvs, rv.cfg)
			}
			verr := f.Validate(tt.cfg)
			err := f.Configure(tt.cfg, tt.lc)
			if tt.refuse == "" {
				if verr != nil || err != nil {
					t.Fatalf("Validate: %v, Configure: %v; want both to take it", verr, err)
				}
				want := f.receiverConfig(tt.cfg)
				for i, rv := range f.recvs {
					if !reflect.DeepEqual(rv.cfg, want) {
						t.Errorf("receiver on %s runs %+v, want %+v", f.hosts[i].Name(), rv.cfg, want)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.refuse) {
				t.Fatalf("Configure: %v, want an error naming %s", err, tt.refuse)
			}
			if got := f.node.Config(); !reflect.DeepEqual(got, node) {
				t.Errorf("refused: the node runs %+v, want %+v as before", got, node)
			}
			if got := lh.Config(); !reflect.DeepEqual(got, lhc) {
				t.Errorf("refused: the Long-haul CNP node runs %+v, want %+v as before", got, lhc)
			}
			for i, rv := range f.recvs {
				if !reflect.DeepEqual(rv.cfg, recvs[i]) {
					t.Errorf("refused: receiver on %s runs %+v, want %+v as before", f.hosts[i].Name(), rv.cfg, recvs[i])
				}
			}
		})
	}
}
