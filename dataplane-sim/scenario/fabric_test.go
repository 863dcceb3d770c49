package scenario

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func loadFabric(t *testing.T) *Scenario {
	t.Helper()
	sc, err := LoadFile("testdata/fabric.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A k-ary fat-tree has k³/4 hosts, (k/2)² core and k² aggregation and edge
// switches, and k³/4 links in each of its three layers; a leaf-spine has
// leaves × hosts_per_leaf hosts and leaves × spines uplinks; a border
// router joins every core (spine) switch.
func TestFabricCounts(t *testing.T) {
	for _, k := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("fat-tree k=%d", k), func(t *testing.T) {
			data := fmt.Sprintf("duration: 1ms\nsample_interval: 1ms\ntopology:\n  fabrics:\n    - {name: f, kind: fat-tree, k: %d, rate: 100G, delay: 1us, border: true}\n", k)
			sc, err := Parse("f.yaml", []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			f := sc.Fabrics[0]
			got := []int{len(sc.Hosts), len(f.Tiers["core"]), len(f.Tiers["agg"]), len(f.Tiers["edge"]), len(sc.Switches), len(sc.Links)}
			cores := k * k / 4
			want := []int{k * k * k / 4, cores, k * k / 2, k * k / 2, cores + k*k + 1, 3*k*k*k/4 + cores}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("hosts, core, agg, edge, switches, links (-want, +got):\n%s", diff)
			}
		})
	}
	data := "duration: 1ms\nsample_interval: 1ms\ntopology:\n  fabrics:\n    - {name: ls, kind: leaf-spine, leaves: 6, spines: 3, hosts_per_leaf: 5, rate: 25G, uplink_rate: 100G, delay: 1us}\n"
	sc, err := Parse("ls.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := []int{len(sc.Hosts), len(sc.Switches), len(sc.Links)}, []int{30, 9, 30 + 18}; !slices.Equal(got, want) {
		t.Errorf("leaf-spine hosts, switches, links = %v, want %v", got, want)
	}
}

// The generated names are the documented ones, and groups stand for them.
func TestFabricNames(t *testing.T) {
	sc := loadFabric(t)
	for _, name := range []string{"dc1-c0", "dc1-c3", "dc1-a3-1", "dc1-e0-0", "dc1-br", "dc2-s1", "dc2-l3", "dc2-br"} {
		if _, ok := nodeIndex(sc, name); !ok {
			t.Errorf("no switch %s", name)
		}
	}
	for _, name := range []string{"dc1-h0-0-0", "dc1-h3-1-1", "dc2-h0-0", "dc2-h3-7"} {
		if !sc.IsHost(name) {
			t.Errorf("no host %s", name)
		}
	}
	if got, want := sc.Mechanism.Nodes, []string{"dc1-br", "dc2-br", "dc2-s0", "dc2-s1"}; !slices.Equal(got, want) {
		t.Errorf("mechanism nodes %v, want %v (dc2-spine is the spines)", got, want)
	}
	wan, ok := sc.Link("wan")
	if !ok || wan.A != "dc1-br" || wan.B != "dc2-br" || !wan.WAN {
		t.Errorf("wan link %+v, want dc1-br to dc2-br marked WAN", wan)
	}
	for _, s := range sc.Switches {
		switch {
		case s.Name == "dc1-br" && s.SharedBuffer != 0:
			t.Errorf("border router %s has a shared buffer", s.Name)
		case strings.HasPrefix(s.Name, "dc1-c") && (s.SharedBuffer != 16*MB || s.SharedAlpha != 2 || s.Queue.ECN.KMin != 50*KB):
			t.Errorf("%s: shared buffer %v alpha %g, K_min %v; want 16MB, 2, 50KB", s.Name, s.SharedBuffer, s.SharedAlpha, s.Queue.ECN.KMin)
		}
	}
	if !sc.ECMP.Enabled || sc.ECMP.Seed != sc.Seed {
		t.Errorf("ECMP %+v: want on with the scenario's seed", sc.ECMP)
	}
}

func nodeIndex(sc *Scenario, name string) (int, bool) {
	i := slices.IndexFunc(sc.Switches, func(s Switch) bool { return s.Name == name })
	return i, i >= 0
}

// Every pattern pairs the hosts it promises.
func TestFabricPatterns(t *testing.T) {
	sc := loadFabric(t)
	fabric := map[string]string{}
	for _, h := range sc.Hosts {
		fabric[h.Name] = h.Fabric
	}
	count := map[string]int{}
	incasts := map[int64][]string{}
	for _, f := range sc.Flows {
		count[f.Group]++
		switch f.Group {
		case "cross":
			if fabric[f.Src] == fabric[f.Dst] {
				t.Errorf("%s: %s to %s in one fabric", f.Name, f.Src, f.Dst)
			}
		case "intra":
			if fabric[f.Src] != fabric[f.Dst] {
				t.Errorf("%s: %s to %s across fabrics", f.Name, f.Src, f.Dst)
			}
		case "burst":
			if f.Dst != "dc1-h0-0-0" {
				t.Errorf("%s: incast to %s", f.Name, f.Dst)
			}
			incasts[int64(f.Start)] = append(incasts[int64(f.Start)], f.Src)
		}
	}
	for at, senders := range incasts {
		if len(senders) != 8 || len(senders) != len(slices.Compact(slices.Sorted(slices.Values(senders)))) {
			t.Errorf("incast at %d ns: senders %v, want 8 distinct", at, senders)
		}
	}
	for _, g := range []string{"cross", "intra", "shuffle", "burst"} {
		if count[g] == 0 {
			t.Errorf("block %s made no flows", g)
		}
	}
}

// load_of wan: each fabric's senders together offer load × its WAN rate.
// Over a long window the bytes offered across the WAN in each direction
// are that, within a few standard deviations of a compound Poisson sum.
func TestWANLoad(t *testing.T) {
	data := `duration: 2s
sample_interval: 1ms
topology:
  fabrics:
    - {name: a, kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4, rate: 100G, delay: 1us}
    - {name: b, kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4, rate: 100G, delay: 1us}
  wan:
    - {a: a, b: b, rate: 10G, delay: 1ms}
traffic:
  generated:
    - {name: x, senders: [a, b], receivers: [a, b], pattern: cross-dc, load_of: wan, load: 0.5, cdf: [[0, 0], [1MB, 1]], max_flows: 1000000}
`
	sc, err := Parse("wan.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var fromA, fromB float64
	for _, f := range sc.Flows {
		if strings.HasPrefix(f.Src, "a-") {
			fromA += float64(f.Size) * 8
		} else {
			fromB += float64(f.Size) * 8
		}
	}
	want := 0.5 * 10e9 * 2 // bits in 2 s
	// Flows of mean 0.5 MB (uniform 0..1 MB): n ≈ 2500 per direction;
	// the sum's relative standard deviation is about sqrt(E[S²]/n)/E[S]
	// = sqrt(4/3 / 2500) ≈ 2.3 %; allow five.
	for dir, got := range map[string]float64{"a→b": fromA, "b→a": fromB} {
		if math.Abs(got-want)/want > 0.115 {
			t.Errorf("%s offered %.3g bits, want %.3g ± 11.5 %%", dir, got, want)
		}
	}
}

// Every flow's path is a shortest path over existing links, and ECMP
// spreads the flows of one pair of hosts over the equal-cost paths of a
// fat-tree within binomial bounds: each of the (k/2)² cores between two
// pods carries a Binomial(n, 4/k²) count of n flows.
func TestECMPSpread(t *testing.T) {
	const n = 4000
	data := fmt.Sprintf(`duration: 1s
sample_interval: 1ms
topology:
  fabrics:
    - {name: f, kind: fat-tree, k: 8, rate: 100G, delay: 1us}
traffic:
  generated:
    - {name: x, senders: [f-h0-0-0], receivers: [f-h7-3-3], load: 1, stop: 40ms, cdf: [[100KB, 0], [100KB, 1]], max_flows: %d}
`, 3*n)
	sc, err := Parse("ecmp.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Flows) < n {
		t.Fatalf("%d flows, want at least %d", len(sc.Flows), n)
	}
	flows := sc.Flows[:n]
	perCore := map[string]int{}
	for _, f := range flows {
		if len(f.Path) != 7 {
			t.Fatalf("%s: path %v, want 7 nodes (host, edge, agg, core, agg, edge, host)", f.Name, f.Path)
		}
		for i := 1; i < len(f.Path); i++ {
			a, b := f.Path[i-1], f.Path[i]
			if _, ok := sc.Link(a + "-" + b); !ok {
				if _, ok := sc.Link(b + "-" + a); !ok {
					t.Fatalf("%s: path %v uses no link between %s and %s", f.Name, f.Path, a, b)
				}
			}
		}
		perCore[f.Path[3]]++
	}
	cores := 16
	if len(perCore) != cores {
		t.Errorf("flows used %d cores, want all %d: %v", len(perCore), cores, perCore)
	}
	p := 1.0 / float64(cores)
	mean, sd := n*p, math.Sqrt(n*p*(1-p))
	// Five standard deviations per core: a false alarm about once in
	// 10^5 runs for 16 cores, and the seed is fixed anyway.
	for c, got := range perCore {
		if math.Abs(float64(got)-mean) > 5*sd {
			t.Errorf("core %s carries %d of %d flows, want %.0f ± %.0f", c, got, n, mean, 5*sd)
		}
	}
	// The flows of one queue-pair connection always take one path (the
	// hash reads only the five-tuple), so the paths are a function of it.
	again, err := Parse("ecmp.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for i := range flows {
		if !slices.Equal(flows[i].Path, again.Flows[i].Path) {
			t.Fatalf("%s: paths differ between two loads", flows[i].Name)
		}
	}
}

// A WAN link the loader refuses is reported at its own line alone: a
// load_of wan block does not add that the topology has no WAN links (or
// that its senders' fabric has none), which the file does not say.
func TestRefusedWANLinkReportedOnce(t *testing.T) {
	const file = `duration: 1ms
sample_interval: 1ms
topology:
  fabrics:
    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}
    - {name: g, kind: fat-tree, k: 2, rate: 100G, delay: 1us}
  wan:
    - {a: f, b: g, rate: 10G, delay: 1ms}
traffic:
  generated:
    - {name: x, senders: [f, g], receivers: [f, g], pattern: cross-dc, load_of: wan, load: 0.5, cdf: [[1KB, 0], [1KB, 1]]}
`
	for _, tt := range []struct{ desc, from, to, want string }{
		{"rate of a wrong unit", "rate: 10G,", "rate: 10GB/s,", `bad.yaml:8:26: topology.wan[0].rate: "10GB/s": unknown rate unit "GB/s"`},
		{"undefined end", "b: g,", "b: h,", `bad.yaml:8:17: topology.wan[0].b: undefined node "h"`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(strings.Replace(file, tt.from, tt.to, 1)))
			errs := Errors(err)
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tt.want) {
				t.Errorf("got %d errors:\n%v\nwant one, %s...", len(errs), err, tt.want)
			}
		})
	}
}

func TestBadFabrics(t *testing.T) {
	head := "duration: 1ms\nsample_interval: 1ms\ntopology:\n"
	tests := []struct {
		desc, yaml, wantField, wantReason string
		wantLine                          int
	}{
		{"odd k", "  fabrics:\n    - {name: f, kind: fat-tree, k: 5, rate: 100G, delay: 1us}\n", "topology.fabrics[0].k", "k = 5 is odd", 5},
		{"zero rate", "  fabrics:\n    - {name: f, kind: fat-tree, k: 4, rate: 0, delay: 1us}\n", "topology.fabrics[0].rate", "must be greater than zero", 5},
		{"zero uplink rate", "  fabrics:\n    - {name: f, kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2, rate: 10G, uplink_rate: 0, delay: 1us}\n", "topology.fabrics[0].uplink_rate", "must be greater than zero", 5},
		{"unknown kind", "  fabrics:\n    - {name: f, kind: torus, k: 4, rate: 100G, delay: 1us}\n", "topology.fabrics[0].kind", `unknown fabric kind "torus"`, 5},
		{"key of the other kind", "  fabrics:\n    - {name: f, kind: fat-tree, k: 4, spines: 2, rate: 100G, delay: 1us}\n", "topology.fabrics[0].spines", "not a key of a fat-tree fabric", 5},
		{"k too large", "  fabrics:\n    - {name: f, kind: fat-tree, k: 50, rate: 100G, delay: 1us}\n", "topology.fabrics[0].k", "out of range", 5},
		{"both buffers", "  fabrics:\n    - {name: f, kind: fat-tree, k: 4, rate: 100G, delay: 1us, buffer: 1MB, shared_buffer: {size: 8MB}}\n", "topology.fabrics[0].shared_buffer", "not both", 5},
		{"zero alpha", "  fabrics:\n    - {name: f, kind: fat-tree, k: 4, rate: 100G, delay: 1us, shared_buffer: {size: 8MB, alpha: 0}}\n", "topology.fabrics[0].shared_buffer.alpha", "greater than zero", 5},
		{"duplicate fabric", "  fabrics:\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\n", "topology.fabrics[1].name", `duplicate fabric name "f"`, 6},
		{"name clash with a host", "  hosts: [{name: f-h0-0-0}]\n  links: []\n  fabrics:\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\n", "topology.fabrics[0].name", `duplicate node name "f-h0-0-0"`, 7},
		{"wan to an undefined fabric", "  fabrics:\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\n  wan:\n    - {a: f, b: g, rate: 10G, delay: 1ms}\n", "topology.wan[0].b", `undefined node "g"`, 7},
		{"wan load without wan", "  fabrics:\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\ntraffic:\n  generated:\n    - {name: x, senders: [f], receivers: [f], load_of: wan, load: 0.5, cdf: [[1KB, 0], [1KB, 1]]}\n", "traffic.generated[0].load_of", "no topology.wan links", 8},
		{"cross-dc in one fabric", "  fabrics:\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\ntraffic:\n  generated:\n    - {name: x, senders: [f], receivers: [f], pattern: cross-dc, load: 0.5, cdf: [[1KB, 0], [1KB, 1]]}\n", "traffic.generated[0].receivers", "no receiver in another fabric", 8},
		{"fan_in too large", "  fabrics:\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\ntraffic:\n  generated:\n    - {name: x, senders: [f], receivers: [f-h0-0-0], pattern: incast, fan_in: 9, load: 0.5, cdf: [[1KB, 0], [1KB, 1]]}\n", "traffic.generated[0].fan_in", "fan_in 9 is more than the 1 senders", 8},
		// A group names several switches: a clash points at the group's
		// own item, and the reason at the other block's.
		{"group clashes with a node", "  fabrics:\n    - {name: f, kind: fat-tree, k: 4, rate: 100G, delay: 1us}\nmechanism:\n  kind: long-haul-cnp\n  nodes: [f-c1]\n  with:\n    - {kind: fast-cnp, nodes: [f-agg, f-core]}\n", "mechanism.with[0].nodes[1]", "f-c1 already runs long-haul-cnp (mechanism.nodes[0])", 10},
		{"node clashes with a group", "  fabrics:\n    - {name: f, kind: fat-tree, k: 4, rate: 100G, delay: 1us}\nmechanism:\n  kind: long-haul-cnp\n  nodes: [f-agg, f-core]\n  with:\n    - {kind: fast-cnp, nodes: [f-c1]}\n", "mechanism.with[0].nodes[0]", "f-c1 already runs long-haul-cnp (mechanism.nodes[1])", 10},
		{"unknown pattern", "  fabrics:\n    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us}\ntraffic:\n  generated:\n    - {name: x, senders: [f], receivers: [f], pattern: ring, load: 0.5, cdf: [[1KB, 0], [1KB, 1]]}\n", "traffic.generated[0].pattern", `unknown pattern "ring"`, 8},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(head+tt.yaml))
			errs := Errors(err)
			if len(errs) == 0 {
				t.Fatalf("no error, want %s: %s", tt.wantField, tt.wantReason)
			}
			e := errs[0]
			if e.File != "bad.yaml" || e.Line != tt.wantLine || e.Field != tt.wantField || !strings.Contains(e.Reason, tt.wantReason) {
				t.Errorf("first error %q, want bad.yaml:%d: %s: ...%s...", e.Error(), tt.wantLine, tt.wantField, tt.wantReason)
			}
		})
	}
}

// The examples of docs/scenarios.md, "Generated fabrics", load: the
// topology and mechanism block, then the traffic block on it.
func TestDocsFabricExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## Generated fabrics")
	if !ok {
		t.Fatal("docs/scenarios.md has no section Generated fabrics")
	}
	var blocks []string
	for _, part := range strings.Split(sec, "```yaml\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		blocks = append(blocks, body)
	}
	if len(blocks) < 2 {
		t.Fatalf("%d yaml examples in the section, want 2", len(blocks))
	}
	data := "duration: 10ms\nsample_interval: 100us\n" + blocks[0] + blocks[1]
	// Named as a file of scenarios/fabric/, so that ../cdf/ resolves.
	sc, err := Parse("../../scenarios/fabric/docs-example.yaml", []byte(data))
	if err != nil {
		t.Fatalf("docs example:\n%s\n%v", data, err)
	}
	if len(sc.Hosts) != 128+128 || len(sc.Fabrics) != 2 || len(sc.Flows) == 0 {
		t.Errorf("%d hosts, %d fabrics, %d flows; want 256, 2 and some", len(sc.Hosts), len(sc.Fabrics), len(sc.Flows))
	}
	if got := sc.Partitions(); !slices.Equal(got, []string{"dc1", "dc2"}) {
		t.Errorf("partitions %v, want [dc1 dc2] (the example's dc1 names its own; dc2 takes its name)", got)
	}
}

// Every shipped flow-size distribution loads, names its source in its
// header, and has a positive mean.
func TestShippedCDFs(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/cdf/*.txt")
	if err != nil || len(files) < 4 {
		t.Fatalf("%v, %v: want websearch, hadoop, storage and rpc", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "# ") || !strings.Contains(string(data), "traffic_gen/") {
				t.Errorf("header does not name its source (traffic_gen/...)")
			}
			y := fmt.Sprintf("duration: 1ms\nsample_interval: 1ms\ntopology:\n  hosts: [{name: a}, {name: b}]\n  links: [{a: a, b: b, rate: 100G, delay: 1us}]\n"+
				"traffic:\n  generated:\n    - {name: g, senders: [a], receivers: [b], load: 0.5, cdf_file: %s}\n", filepath.Base(f))
			l := &loader{d: &decoder{file: f}, dir: filepath.Dir(f)}
			c := l.cdfFile(nil, "cdf_file", filepath.Base(f))
			if c == nil {
				t.Fatalf("%v", l.d.errs)
			}
			if m := c.Mean(); m <= 0 {
				t.Errorf("mean %g", m)
			}
			if _, err := Parse(f+".yaml", []byte(y)); err != nil {
				t.Error(err)
			}
		})
	}
}

// Each generated fabric is a partition of its own unless its partition
// key says otherwise: fabrics joined by a WAN are cut at the WAN links
// (their delay is the lookahead), fabrics given one partition run
// together, and a cut WAN link without delay is refused at its line.
func TestFabricPartitions(t *testing.T) {
	head := "duration: 1ms\nsample_interval: 1ms\ntopology:\n  fabrics:\n"
	two := func(pa, pb, delay string) string {
		return head + "    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us" + pa + "}\n" +
			"    - {name: g, kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2, rate: 100G, delay: 1us" + pb + "}\n" +
			"  wan:\n    - {name: wan, a: f, b: g, rate: 10G, delay: " + delay + "}\n"
	}
	for _, tt := range []struct {
		desc, yaml string
		want       []string
	}{
		{"default", two("", "", "1ms"), []string{"f", "g"}},
		{"one partition", two(", partition: all", ", partition: all", "1ms"), []string{"all"}},
		{"named", two(", partition: east", "", "1ms"), []string{"east", "g"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sc, err := Parse("p.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Partitions(); !slices.Equal(got, tt.want) {
				t.Errorf("partitions %v, want %v", got, tt.want)
			}
			for _, f := range sc.Fabrics {
				for _, h := range f.Hosts {
					if got, want := sc.Partitions()[sc.PartitionOf(h)], f.Partition; got != want {
						t.Errorf("host %s in partition %s, its fabric's is %s", h, got, want)
					}
				}
			}
			if br := sc.PartitionOf("f-br"); br != sc.PartitionOf("f-h0-0-0") {
				t.Errorf("f-br in partition %d, its fabric's hosts in %d", br, sc.PartitionOf("f-h0-0-0"))
			}
		})
	}
	_, err := Parse("p.yaml", []byte(two("", "", "0s")))
	errs := Errors(err)
	if len(errs) == 0 || errs[0].Line != 8 || errs[0].Field != "topology.wan[0].delay" || !strings.Contains(errs[0].Reason, "without delay") {
		t.Errorf("zero-delay WAN between two partitions: %v, want an error at line 8, topology.wan[0].delay", err)
	}
	if _, err := Parse("p.yaml", []byte(two(", partition: all", ", partition: all", "0s"))); err != nil {
		t.Errorf("zero-delay WAN inside one partition: %v", err)
	}
}

// A fabric that cannot be built (here an odd k) is reported once: the
// names it would have defined (the fabric, its border router, groups,
// nodes and links, and a wan link to it) are unknown because of that
// error, not undefined each on its own; an unrelated undefined name is
// still reported. Exactly two errors, each with its file, line and key.
func TestFailedFabricReportedOnce(t *testing.T) {
	const src = `duration: 1ms
sample_interval: 100us
topology:
  fabrics:
    - {name: dc1, kind: fat-tree, k: 3, rate: 100G, delay: 1us}
    - {name: dc2, kind: fat-tree, k: 2, rate: 100G, delay: 1us}
  wan:
    - {name: wan, a: dc1, b: dc2, rate: 100G, delay: 10ms}
  routes:
    - {src: dc1-h0-0-0, dst: dc2-h0-0-0, path: [dc1-h0-0-0, dc1-e0-0, dc1-br, dc2-br, dc2-e0-0, dc2-h0-0-0]}
mechanism:
  kind: long-haul-cnp
  nodes: [dc1-br, dc2-br, nosuch]
traffic:
  generated:
    - {name: x, senders: [dc1, dc2], receivers: [dc1, dc2], pattern: cross-dc, load: 0.5, cdf: [[1KB, 0], [1KB, 1]]}
    - {name: y, senders: [dc1-core], receivers: [dc2], load: 0.5, cdf: [[1KB, 0], [1KB, 1]]}
events:
  - {at: 500us, kind: link-rate, target: wan, value: 50G}
  - {at: 500us, kind: link-rate, target: dc1-e0-0-dc1-a0-0, value: 50G}
`
	_, err := Parse("oddk.yaml", []byte(src))
	var got []string
	for _, e := range Errors(err) {
		got = append(got, fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Reason))
	}
	want := []string{
		"oddk.yaml:5: topology.fabrics[0].k: k = 3 is odd; a k-ary fat-tree needs an even k",
		`oddk.yaml:13: mechanism.nodes[2]: undefined node "nosuch"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want, +got):\n%s", diff)
	}
}

// Next to a fabric that cannot be built, only the names it would have
// generated go unreported (TestFailedFabricReportedOnce): a hand-written
// node or link whose name merely begins with the fabric's name and a dash
// is reported undefined, as is a name of the other kind of fabric or not
// written as the generator writes numbers. Every error has its file, line
// and key.
func TestFailedFabricNeighbour(t *testing.T) {
	_, err := LoadFile("testdata/bad_failed_fabric_neighbour.yaml")
	var got []string
	for _, e := range Errors(err) {
		got = append(got, fmt.Sprintf("%s:%d: %s: %s", filepath.Base(e.File), e.Line, e.Field, e.Reason))
	}
	want := []string{
		"bad_failed_fabric_neighbour.yaml:5: topology.fabrics[0].k: k = 3 is odd; a k-ary fat-tree needs an even k",
		`bad_failed_fabric_neighbour.yaml:12: topology.links[0].a: undefined node "dc1-gateway"`,
		`bad_failed_fabric_neighbour.yaml:15: mechanism.nodes[6]: undefined node "dc1-s0"`,
		`bad_failed_fabric_neighbour.yaml:15: mechanism.nodes[7]: undefined node "dc1-e00-0"`,
		`bad_failed_fabric_neighbour.yaml:15: mechanism.nodes[8]: undefined node "dc1-brr"`,
		`bad_failed_fabric_neighbour.yaml:20: events[3].target: undefined link "dc1-uplink"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want, +got):\n%s", diff)
	}
}

// lostFabric.generated: the names of generateFabric's shapes, with any
// numbers, for the fabric's kind (either kind when it was not known), the
// border router only when it would have had one, links between two of its
// nodes; a fabric name with dashes of its own.
func TestLostFabricGenerated(t *testing.T) {
	fat := lostFabric{name: "dc-1", kind: FabricFatTree, border: true}
	spine := lostFabric{name: "dc-1", kind: FabricLeafSpine}
	unknown := lostFabric{name: "dc-1"}
	tests := []struct {
		desc string
		f    lostFabric
		name string
		want bool
	}{
		{"the fabric", fat, "dc-1", true},
		{"a group", fat, "dc-1-switches", true},
		{"a tier", fat, "dc-1-agg", true},
		{"another kind's tier", fat, "dc-1-spine", false},
		{"a host", fat, "dc-1-h3-1-12", true},
		{"a core", fat, "dc-1-c100", true},
		{"a leading zero", fat, "dc-1-c01", false},
		{"no number", fat, "dc-1-c", false},
		{"another kind's node", fat, "dc-1-s0", false},
		{"a hand-written neighbour", fat, "dc-1-gw", false},
		{"the border router", fat, "dc-1-br", true},
		{"no border router", spine, "dc-1-br", false},
		{"a link", fat, "dc-1-h0-0-0-dc-1-e0-0", true},
		{"a border link", fat, "dc-1-c0-dc-1-br", true},
		{"a link to a neighbour", fat, "dc-1-c0-dc-1-gw", false},
		{"a link to another fabric", fat, "dc-1-c0-dc-2-br", false},
		{"leaf-spine host", spine, "dc-1-h0-1", true},
		{"leaf-spine link", spine, "dc-1-l0-dc-1-s1", true},
		{"kind unknown: fat-tree", unknown, "dc-1-a0-1", true},
		{"kind unknown: leaf-spine", unknown, "dc-1-leaf", true},
		{"another fabric's prefix", fat, "dc-10-c0", false},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := tt.f.generated(tt.name); got != tt.want {
				t.Errorf("%+v.generated(%q) = %v, want %v", tt.f, tt.name, got, tt.want)
			}
		})
	}
}
