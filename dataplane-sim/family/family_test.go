package family

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

const specFile = "../../scenarios/family/tuner.yaml"

// TestGenerateEverySeed: every seed of both sets of the project's family
// gives a scenario that loads, the same one twice, inside the documented
// ranges.
func TestGenerateEverySeed(t *testing.T) {
	s, err := LoadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Test.List()); n < 30 {
		t.Errorf("%d held-out seeds, want at least 30", n)
	}
	seen := map[string]bool{}
	for set, seeds := range s.Sets() {
		for _, seed := range seeds.List() {
			d, text, sc, err := s.Generate(set, seed)
			if err != nil {
				t.Fatal(err)
			}
			_, again, _, _ := s.Generate(set, seed)
			if !bytes.Equal(text, again) {
				t.Errorf("%s seed %d: two different files", set, seed)
			}
			if d.Rate < s.LinkRate.Min || d.Rate > s.LinkRate.Max || d.RTT < s.WANRTT.Min || d.RTT > s.WANRTT.Max ||
				d.Overload < s.Overload.Min-0.005 || d.Overload > s.Overload.Max+0.005 {
				t.Errorf("%s seed %d: %s outside the ranges", set, seed, d.Short())
			}
			if sc.Name == "" || len(sc.Flows) == 0 {
				t.Errorf("%s seed %d: empty scenario", set, seed)
			}
			seen[d.Congestion] = true
			seen[d.Step] = true
			seen[d.IP] = true
		}
	}
	for _, want := range append(append(append([]string{}, congestions...), steps...), ipVersions...) {
		if !seen[want] {
			t.Errorf("no scenario with %s in the family", want)
		}
	}
}

// TestParseErrors: a bad spec is refused with the file, the line and the key.
func TestParseErrors(t *testing.T) {
	base, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc, from, to, want string
	}{
		{"impossible range", "link_rate: {min: 10Gbps, max: 400Gbps}", "link_rate: {min: 400Gbps, max: 10Gbps}",
			"f.yaml:10:18: link_rate: impossible range: min 400Gbps is above max 10Gbps"},
		{"outside what the generator builds", "overload: {min: 1.1, max: 8}", "overload: {min: 0.5, max: 8}",
			"f.yaml:12:17: overload.min: 0.5 is outside what the generator builds, 1..16"},
		{"overlapping seeds", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 10, to: 40}",
			"f.yaml:23:13: test_seeds: 10..40 overlaps train_seeds 1..48 (at 10)"},
		{"the retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 1001, to: 1032}",
			"f.yaml:23:13: test_seeds: 1001..1032 overlaps retired_seeds 1001..1032 (at 1001): a retired set's results were seen"},
		{"overlapping the retired set in part", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 1030, to: 1061}",
			"f.yaml:23:13: test_seeds: 1030..1061 overlaps retired_seeds 1001..1032 (at 1030)"},
		{"the second retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 2001, to: 2032}",
			"f.yaml:23:13: test_seeds: 2001..2032 overlaps retired_seeds 2001..2032 (at 2001): a retired set's results were seen"},
		{"retired sets overlapping", "  - {from: 2001, to: 2032}", "  - {from: 1020, to: 2032}",
			"f.yaml:26:5: retired_seeds[1]: 1020..2032 overlaps retired_seeds[0] 1001..1032 (at 1020): each seed is retired once"},
		{"a retired set backwards", "  - {from: 2001, to: 2032}", "  - {from: 2032, to: 2001}",
			"f.yaml:26:12: retired_seeds[1]: impossible range: from 2032 is above to 2001"},
		{"seeds backwards", "train_seeds: {from: 1, to: 48}", "train_seeds: {from: 48, to: 1}",
			"f.yaml:22:21: train_seeds: impossible range: from 48 is above to 1"},
		{"the third retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 3001, to: 3032}",
			"f.yaml:23:13: test_seeds: 3001..3032 overlaps retired_seeds 3001..3032 (at 3001): a retired set's results were seen"},
		{"the fourth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 4001, to: 4032}",
			"f.yaml:23:13: test_seeds: 4001..4032 overlaps retired_seeds 4001..4032 (at 4001): a retired set's results were seen"},
		{"the fifth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 9001, to: 9032}",
			"f.yaml:23:13: test_seeds: 9001..9032 overlaps retired_seeds 9001..9032 (at 9001): a retired set's results were seen"},
		{"the sixth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 10001, to: 10032}",
			"f.yaml:23:13: test_seeds: 10001..10032 overlaps retired_seeds 10001..10032 (at 10001): a retired set's results were seen"},
		{"the seventh retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 13001, to: 13032}",
			"f.yaml:23:13: test_seeds: 13001..13032 overlaps retired_seeds 13001..13032 (at 13001): a retired set's results were seen"},
		{"the eighth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 14001, to: 14032}",
			"f.yaml:23:13: test_seeds: 14001..14032 overlaps retired_seeds 14001..14032 (at 14001): a retired set's results were seen"},
		{"the ninth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 15001, to: 15032}",
			"f.yaml:23:13: test_seeds: 15001..15032 overlaps retired_seeds 15001..15032 (at 15001): a retired set's results were seen"},
		{"the tenth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 16001, to: 16032}",
			"f.yaml:23:13: test_seeds: 16001..16032 overlaps retired_seeds 16001..16032 (at 16001): a retired set's results were seen"},
		{"the eleventh retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 17001, to: 17032}",
			"f.yaml:23:13: test_seeds: 17001..17032 overlaps retired_seeds 17001..17032 (at 17001): a retired set's results were seen"},
		{"the twelfth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 18001, to: 18032}",
			"f.yaml:23:13: test_seeds: 18001..18032 overlaps retired_seeds 18001..18032 (at 18001): a retired set's results were seen"},
		{"the thirteenth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 19001, to: 19032}",
			"f.yaml:23:13: test_seeds: 19001..19032 overlaps retired_seeds 19001..19032 (at 19001): a retired set's results were seen"},
		{"the fourteenth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 20001, to: 20032}",
			"f.yaml:23:13: test_seeds: 20001..20032 overlaps retired_seeds 20001..20032 (at 20001): a retired set's results were seen"},
		{"the fifteenth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 21001, to: 21032}",
			"f.yaml:23:13: test_seeds: 21001..21032 overlaps retired_seeds 21001..21032 (at 21001): a retired set's results were seen"},
		{"the sixteenth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 22001, to: 22032}",
			"f.yaml:23:13: test_seeds: 22001..22032 overlaps retired_seeds 22001..22032 (at 22001): a retired set's results were seen"},
		{"the seventeenth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 23001, to: 23032}",
			"f.yaml:23:13: test_seeds: 23001..23032 overlaps retired_seeds 23001..23032 (at 23001): a retired set's results were seen"},
		{"the eighteenth retired held-out set again", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 24001, to: 24032}",
			"f.yaml:23:13: test_seeds: 24001..24032 overlaps retired_seeds 24001..24032 (at 24001): a retired set's results were seen"},
		{"no judgement cycle", "min_judgements: 40", "min_judgements: 0", "f.yaml:20:17: min_judgements: 0 is outside 1..10000"},
		{"packet budget too small", "max_packets: 300000", "max_packets: 10", "f.yaml:19:14: max_packets: 10 is outside"},
		{"packet budget missing", "max_packets: 300000 ", "", "f.yaml:9:1: max_packets: missing"},
		{"unknown congestion point", "congestion: [near-source, mid-wan, far-end, two]", "congestion: [near-source, middle]",
			`f.yaml:13:27: congestion[1]: "middle" is not one of`},
		{"unknown key", "ip: [v4, v6]", "ipv: [v4, v6]", "f.yaml:15:1: ipv: unknown key"},
		{"missing key", "ip: [v4, v6]\n", "", "f.yaml:9:1: ip: missing"},
		{"bad rate", "wan_rtt: {min: 500us, max: 40ms}", "wan_rtt: {min: 500us, max: fast}", "f.yaml:11:28: wan_rtt.max:"},
		{"no simulation seed", "min_duration: 20ms ", "min_duration: 20ms\nsim_seeds: 0\n#", "f.yaml:22:12: sim_seeds: 0 is outside 1..20 simulation seeds per run"},
		{"absurdly many simulation seeds", "min_duration: 20ms ", "min_duration: 20ms\nsim_seeds: 1000\n#", "f.yaml:22:12: sim_seeds: 1000 is outside 1..20"},
		{"simulation seeds not a number", "min_duration: 20ms ", "min_duration: 20ms\nsim_seeds: three\n#", `f.yaml:22:12: sim_seeds: "three" is not an integer`},
		// The mistakes users make: each names the file, the line, the
		// column and the key, and none is read as something else.
		{"share quoted", "web_search: 0.3", `web_search: "0.3"`, `f.yaml:16:13: web_search: "0.3" is not a finite number`},
		{"integer quoted", "min_judgements: 40", `min_judgements: "40"`, `f.yaml:20:17: min_judgements: "40" is not an integer`},
		{"seed quoted", "train_seeds: {from: 1, to: 48}", `train_seeds: {from: "1", to: 48}`, `f.yaml:22:21: train_seeds.from: "1" is not an integer`},
		{"integer as a float", "min_judgements: 40", "min_judgements: 40.0", `f.yaml:20:17: min_judgements: "40.0" is not an integer`},
		{"share NaN", "web_search: 0.3", "web_search: .nan", `f.yaml:16:13: web_search: ".nan" is not a finite number`},
		{"load infinite", "overload: {min: 1.1, max: 8}", "overload: {min: 1.1, max: .inf}", `f.yaml:12:27: overload.max: ".inf" is not a finite number`},
		{"seed overflowing int64", "train_seeds: {from: 1, to: 48}", "train_seeds: {from: 1, to: 99999999999999999999}", `f.yaml:22:28: train_seeds.to: "99999999999999999999" is not an integer`},
		// A seed near the top of int64 parsed, and its scenarios (seed +
		// k·SimSeedStride) did not load.
		{"seed too large", "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 9223372036854775800, to: 9223372036854775807}",
			"f.yaml:23:20: test_seeds.from: 9223372036854775800 is above 1152921504606846976"},
		{"rate without unit", "link_rate: {min: 10Gbps, max: 400Gbps}", "link_rate: {min: 10, max: 400Gbps}", `f.yaml:10:18: link_rate.min: "10" has no unit`},
		{"round trip without unit", "wan_rtt: {min: 500us, max: 40ms}", "wan_rtt: {min: 5, max: 40ms}", `f.yaml:11:16: wan_rtt.min: "5" has no unit`},
		{"min above max", "wan_rtt: {min: 500us, max: 40ms}", "wan_rtt: {min: 50ms, max: 40ms}", "f.yaml:11:16: wan_rtt: impossible range: min 50ms is above max 40ms"},
		{"range a list", "wan_rtt: {min: 500us, max: 40ms}", "wan_rtt: [500us, 40ms]", "f.yaml:11:10: wan_rtt: want a mapping"},
		{"range key typo", "wan_rtt: {min: 500us, max: 40ms}", "wan_rtt: {min: 500us, mx: 40ms}", "f.yaml:11:23: wan_rtt.mx: unknown key"},
		{"choices a word", "ip: [v4, v6]", "ip: v4", "f.yaml:15:5: ip: want a non-empty list of v4, v6"},
		{"key given twice", "ip: [v4, v6]", "ip: [v4, v6]\nip: [v4]", "f.yaml:16:1: ip: given twice"},
		{"tab in the indentation", "  - {from: 2001, to: 2032}", "\t- {from: 2001, to: 2032}", "f.yaml:26:1: a tab in the indentation (YAML indents with spaces only)"},
		// yaml.v3 names line 14, the line above the bracket.
		{"yaml syntax", "ip: [v4, v6]", "ip: [v4, v6", "f.yaml:15:1: did not find expected ',' or ']'"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			text := strings.Replace(string(base), tt.from, tt.to, 1)
			if text == string(base) {
				t.Fatalf("%q not in %s", tt.from, specFile)
			}
			_, err := Parse("f.yaml", []byte(text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestParseOddDocuments: a spec that is no mapping at all names the file
// (and the line when there is one) and says so.
func TestParseOddDocuments(t *testing.T) {
	for _, tt := range []struct{ desc, in, want string }{
		{"empty", "", "f.yaml: (document): empty"},
		{"comment only", "# nothing\n", "f.yaml: (document): empty"},
		{"a list", "- name: fam\n", "f.yaml:1:1: (document): want a mapping"},
		{"a word", "fam\n", "f.yaml:1:1: (document): want a mapping"},
		{"syntax on the first line", "name: fam: x\n", "f.yaml:1:1: mapping values are not allowed in this context"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse(%q) = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestSimSeeds: sim_seeds is 1 when the spec does not name it, and what
// it says when it does; GenerateAt's k-th simulation seed is the family
// seed + k·SimSeedStride, written in the file's seed and the web-search
// block's (the draw unchanged), and k = 0 is Generate's file byte for
// byte.
func TestSimSeeds(t *testing.T) {
	base, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("f.yaml", base)
	if err != nil {
		t.Fatal(err)
	}
	if s.SimSeeds != 1 {
		t.Errorf("SimSeeds %d without sim_seeds, want 1", s.SimSeeds)
	}
	three, err := Parse("f.yaml", append(slices.Clone(base), "sim_seeds: 3\n"...))
	if err != nil {
		t.Fatal(err)
	}
	if three.SimSeeds != 3 {
		t.Errorf("SimSeeds %d with sim_seeds: 3", three.SimSeeds)
	}
	if got := SimSeed(7, 2); got != 200_007 {
		t.Errorf("SimSeed(7, 2) = %d, want 200007", got)
	}
	d0, text0, _, err := s.Generate("train", 1)
	if err != nil {
		t.Fatal(err)
	}
	dk, textK, sc, err := s.GenerateAt("train", 1, 0)
	if err != nil || !bytes.Equal(text0, textK) || dk != d0 {
		t.Fatalf("GenerateAt k=0 differs from Generate (err %v)", err)
	}
	// A seed with web-search background: both seed lines move.
	for seed := int64(1); seed <= 48; seed++ {
		if d, _, _, _ := s.Generate("train", seed); d.WebSearch > 0 {
			d0, text0, _, _ = s.Generate("train", seed)
			break
		}
	}
	dk, textK, sc, err = s.GenerateAt("train", d0.Seed, 2)
	if err != nil {
		t.Fatal(err)
	}
	if dk != d0 {
		t.Errorf("draw %+v at k=2, want %+v", dk, d0)
	}
	want := strings.ReplaceAll(string(text0), fmt.Sprintf("seed: %d\n", d0.Seed), fmt.Sprintf("seed: %d\n", SimSeed(d0.Seed, 2)))
	if n := strings.Count(string(text0), fmt.Sprintf("seed: %d\n", d0.Seed)); n != 2 {
		t.Errorf("train seed %d: %d seed lines, want 2 (the file's and the web-search block's)", d0.Seed, n)
	}
	if string(textK) != want {
		t.Errorf("train seed %d at k=2: the file differs in more than its seeds:\n%s", d0.Seed, textK)
	}
	if sc.Seed != SimSeed(d0.Seed, 2) {
		t.Errorf("scenario seed %d, want %d", sc.Seed, SimSeed(d0.Seed, 2))
	}
	if _, _, _, err := s.GenerateAt("train", 1, -1); err == nil {
		t.Error("GenerateAt k=-1: no error")
	}
}

// TestRetiredSeeds: retired_seeds is one {from, to} set or a list of
// them; every one is refused as a test set, and an empty list is an error.
func TestRetiredSeeds(t *testing.T) {
	base, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	list := "retired_seeds:                           # held-out sets whose results were seen (docs/tuner.md)\n" +
		"  - {from: 1001, to: 1032}               # the first\n" +
		"  - {from: 2001, to: 2032}               # the second\n" +
		"  - {from: 3001, to: 3032}               # the third\n" +
		"  - {from: 4001, to: 4032}               # the fourth\n" +
		"  - {from: 9001, to: 9032}               # the fifth\n" +
		"  - {from: 10001, to: 10032}             # the sixth\n" +
		"  - {from: 13001, to: 13032}             # the seventh\n" +
		"  - {from: 14001, to: 14032}             # the eighth\n" +
		"  - {from: 15001, to: 15032}             # the ninth\n" +
		"  - {from: 16001, to: 16032}             # the tenth\n" +
		"  - {from: 17001, to: 17032}             # the eleventh\n" +
		"  - {from: 18001, to: 18032}             # the twelfth\n" +
		"  - {from: 19001, to: 19032}             # the thirteenth\n" +
		"  - {from: 20001, to: 20032}             # the fourteenth\n" +
		"  - {from: 21001, to: 21032}             # the fifteenth\n" +
		"  - {from: 22001, to: 22032}             # the sixteenth\n" +
		"  - {from: 23001, to: 23032}             # the seventeenth\n" +
		"  - {from: 24001, to: 24032}             # the eighteenth\n"
	if !strings.Contains(string(base), list) {
		t.Fatalf("%s: no list of retired sets", specFile)
	}
	s, err := Parse("f.yaml", base)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Seeds{{1001, 1032}, {2001, 2032}, {3001, 3032}, {4001, 4032}, {9001, 9032}, {10001, 10032}, {13001, 13032}, {14001, 14032}, {15001, 15032}, {16001, 16032}, {17001, 17032}, {18001, 18032}, {19001, 19032}, {20001, 20032}, {21001, 21032}, {22001, 22032}, {23001, 23032}, {24001, 24032}}; !slices.Equal(s.Retired, want) {
		t.Errorf("retired %v, want %v", s.Retired, want)
	}
	one := strings.Replace(string(base), list, "retired_seeds: {from: 1001, to: 1032}\n", 1)
	if s, err := Parse("f.yaml", []byte(one)); err != nil || !slices.Equal(s.Retired, []Seeds{{1001, 1032}}) {
		t.Errorf("one retired set: %v, %v", s, err)
	}
	for _, tt := range []struct{ desc, text, want string }{
		{"the first set as the test set", strings.Replace(string(base), "test_seeds: {from: 25001, to: 25032}", "test_seeds: {from: 1010, to: 1041}", 1),
			"f.yaml:23:13: test_seeds: 1010..1041 overlaps retired_seeds 1001..1032 (at 1010)"},
		{"empty list", strings.Replace(string(base), list, "retired_seeds: []\n", 1),
			"f.yaml:24:16: retired_seeds: want {from, to} or a non-empty list of them"},
		{"a list of something else", strings.Replace(string(base), list, "retired_seeds: [1001]\n", 1),
			"f.yaml:24:17: retired_seeds[0]: want a mapping"},
	} {
		if _, err := Parse("f.yaml", []byte(tt.text)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.desc, err, tt.want)
		}
	}
}

// TestDuration: a run lasts DurationRTT round trips, shortened to the
// packet budget, never under MinJudgements judgement cycles; load steps
// then have MinJudgements/2 cycles on each side.
func TestDuration(t *testing.T) {
	s, err := LoadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rate scenario.Rate
		rtt  time.Duration
		want time.Duration
	}{
		{10 * scenario.Gbps, 2 * time.Millisecond, 400 * time.Millisecond},    // 200 RTT: 1.2e5 packets of 4 KB
		{10 * scenario.Gbps, 10 * time.Millisecond, 983 * time.Millisecond},   // the budget: 3e5 packets of 4 KB (98 RTT)
		{400 * scenario.Gbps, 40 * time.Millisecond, 1688 * time.Millisecond}, // 40 cycles of 42.2 ms, above the budget's 0.39 s
		{100 * scenario.Gbps, 20 * time.Millisecond, 888 * time.Millisecond},  // 40 cycles of 22.2 ms, above the budget's 0.39 s
		{10 * scenario.Gbps, 500 * time.Microsecond, 108 * time.Millisecond},  // 40 cycles of 2.7 ms (216 RTT)
	} {
		got := s.Duration(tt.rate, tt.rtt)
		if got != tt.want {
			t.Errorf("%v, RTT %v: %v, want %v", tt.rate, tt.rtt, got, tt.want)
		}
		if cycles := float64(got) / float64(Judgement(tt.rtt)); cycles < float64(s.MinJudgements)-0.5 {
			t.Errorf("%v, RTT %v: %.1f judgement cycles", tt.rate, tt.rtt, cycles)
		}
	}
}

// FuzzParse: any spec parses or is refused with errors that each name the
// file (and a line and column, when there is one); a spec that parses
// generates a loadable scenario for its first seeds.
func FuzzParse(f *testing.F) {
	specs, _ := filepath.Glob("../../scenarios/family/*.yaml")
	for _, name := range specs {
		if base, err := os.ReadFile(name); err == nil {
			f.Add(base)
		}
	}
	f.Add([]byte("name: x\nlink_rate: {min: 1Gbps, max: 1Gbps}\n"))
	f.Add([]byte("- a\n- b\n"))
	located := regexp.MustCompile(`^fuzz\.yaml(:\d+:\d+)?: `)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !located.MatchString(line) {
					t.Fatalf("error line without the file: %q", line)
				}
			}
			return
		}
		for set, seeds := range s.Sets() {
			if _, _, _, err := s.Generate(set, seeds.From); err != nil {
				t.Errorf("a spec that parses generates a bad scenario: %v", err)
			}
		}
	})
}

// TestRTTEst: rtt_est: port writes each generated scenario with RTT_est
// left to each port's link (rtt_est 0), the file otherwise byte for byte
// the default's (RTT_est the WAN's round trip on every port: rtt_est: wan,
// or the key left out); any other value is refused with the file, the line
// and the key.
func TestRTTEst(t *testing.T) {
	base, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Parse("f.yaml", base)
	if err != nil {
		t.Fatal(err)
	}
	if def.RTTEst != RTTEstWAN {
		t.Errorf("RTTEst %q without the key, want %q", def.RTTEst, RTTEstWAN)
	}
	wan, err := Parse("f.yaml", append(slices.Clone(base), "rtt_est: wan\n"...))
	if err != nil {
		t.Fatal(err)
	}
	port, err := Parse("f.yaml", append(slices.Clone(base), "rtt_est: port\n"...))
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range def.Train.List()[:8] {
		d, text, _, err := def.Generate("train", seed)
		if err != nil {
			t.Fatal(err)
		}
		_, textWAN, _, _ := wan.Generate("train", seed)
		if !bytes.Equal(text, textWAN) {
			t.Errorf("train seed %d: rtt_est: wan differs from the default", seed)
		}
		dp, textPort, sc, err := port.Generate("train", seed)
		if err != nil {
			t.Fatal(err)
		}
		if dp != d {
			t.Errorf("train seed %d: draw %+v with rtt_est: port, want %+v", seed, dp, d)
		}
		line := func(est string) string { return fmt.Sprintf("    rtt_est: %s\n", est) }
		wantLine := line(us(d.RTT))
		if !strings.Contains(string(text), wantLine) {
			t.Fatalf("train seed %d: no %q in the default's file", seed, wantLine)
		}
		if want := strings.Replace(string(text), wantLine, line("0"), 1); string(textPort) != want {
			t.Errorf("train seed %d: rtt_est: port differs from the default in more than its rtt_est line:\n%s", seed, textPort)
		}
		if sc.Mechanism.LongHaulCNP().RTTEst != 0 {
			t.Errorf("train seed %d: RTT_est %v with rtt_est: port, want 0 (each port's link)", seed, sc.Mechanism.LongHaulCNP().RTTEst)
		}
	}
	if _, err := Parse("f.yaml", append(slices.Clone(base), "rtt_est: 10ms\n"...)); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf(`f.yaml:%d:10: rtt_est: "10ms" is not one of wan, port`, strings.Count(string(base), "\n")+1)) {
		t.Errorf("rtt_est: 10ms: error %v", err)
	}
}

// TestRecoveryStepPercent: recovery_step_percent writes each generated
// scenario with the sources' recovery step as that share of each QP's
// normal rate (the scenarios' recovery_step_percent), the file otherwise
// byte for byte the one without the key (the scenarios' absolute
// default), the draws the same; a value outside 1..100 is refused with
// the file, line and key.
func TestRecoveryStepPercent(t *testing.T) {
	base := specWithout(t, "recovery_step_percent", "node_params")
	def, err := Parse("f.yaml", base)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := Parse("f.yaml", append(slices.Clone(base), "recovery_step_percent: 5\n"...))
	if err != nil {
		t.Fatal(err)
	}
	if def.RecoveryStepPercent != 0 || rel.RecoveryStepPercent != 5 {
		t.Errorf("RecoveryStepPercent %d without the key, %d with 5", def.RecoveryStepPercent, rel.RecoveryStepPercent)
	}
	for seed, p := range addsParamLines(t, def, rel, "    recovery_step_percent: 5\n") {
		pr := p[1]
		if p[0].RecoveryStepPercent != 0 || pr.RecoveryStepPercent != 5 || pr.RecoveryStep != p[0].RecoveryStep {
			t.Errorf("train seed %d: recovery_step_percent %d / %d, recovery_step %v / %v", seed, p[0].RecoveryStepPercent, pr.RecoveryStepPercent, p[0].RecoveryStep, pr.RecoveryStep)
		}
	}
	for _, v := range []string{"0", "101", "5%"} {
		_, err := Parse("f.yaml", append(slices.Clone(base), "recovery_step_percent: "+v+"\n"...))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("f.yaml:%d:24: recovery_step_percent: ", strings.Count(string(base), "\n")+1)) {
			t.Errorf("recovery_step_percent: %s: error %v", v, err)
		}
	}
}

// TestPortFamily: scenarios/family/longhaul-options-port.yaml (session 12's
// second check, docs/longhaul.md) loads with rtt_est: port and writes every
// development scenario with RTT_est left to each port's link.
func TestPortFamily(t *testing.T) {
	s, err := LoadFile("../../scenarios/family/longhaul-options-port.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.RTTEst != RTTEstPort {
		t.Fatalf("RTTEst %q, want %q", s.RTTEst, RTTEstPort)
	}
	for _, seed := range s.Train.List() {
		_, _, sc, err := s.Generate("train", seed)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Mechanism.LongHaulCNP().RTTEst; got != 0 {
			t.Errorf("train seed %d: RTT_est %v, want 0 (each port's link)", seed, got)
		}
	}
}

// TestNodeParams: node_params writes its long-haul-cnp params into every
// generated scenario's params after the generator's own, in the spec's
// order, the file otherwise byte for byte the one without the key and
// the draws the same; the loaded scenario has them.
func TestNodeParams(t *testing.T) {
	base := specWithout(t, "node_params")
	var specs [2]*Spec
	for i, extra := range []string{"", "node_params: {per_flow_rtt: true, one_cut_per_episode: true, v_growth: \"5Gbps\"}\n"} {
		var err error
		if specs[i], err = Parse("f.yaml", append(slices.Clone(base), extra...)); err != nil {
			t.Fatal(err)
		}
	}
	def, opt := specs[0], specs[1]
	if def.NodeParams != nil {
		t.Errorf("NodeParams %v without the key", def.NodeParams)
	}
	added := "    per_flow_rtt: true\n    one_cut_per_episode: true\n    v_growth: \"5Gbps\"\n"
	for seed, p := range addsParamLines(t, def, opt, added) {
		if po := p[1]; p[0].PerFlowRTT || p[0].OneCutPerEpisode || !po.PerFlowRTT || !po.OneCutPerEpisode || po.RepeatResume || po.VGrowth != 5*scenario.Gbps {
			t.Errorf("train seed %d: without node_params %+v, with %+v", seed, p[0], po)
		}
	}
}

// TestNodeParamsErrors: a bad node_params is refused with the family
// file, the line and the key: the scenario loader's own checks (an unknown
// param, a bad value, a param that needs another), a param the generator
// writes itself, and what is not a mapping of scalars.
func TestNodeParamsErrors(t *testing.T) {
	base := specWithout(t, "node_params")
	line := strings.Count(string(base), "\n") + 2 // the first param's line
	for _, tt := range []struct{ desc, params, want string }{
		{"unknown param", "  one_cut_per_episode: true\n  one_cut_per_flow: true\n",
			fmt.Sprintf("f.yaml:%d:3: node_params.one_cut_per_flow: unknown field (want one of: k_base, alpha,", line+1)},
		{"bad bool", "  per_flow_rtt: sometimes\n", fmt.Sprintf(`f.yaml:%d:3: node_params.per_flow_rtt: want true or false, got "sometimes"`, line)},
		{"bad rate", "  v_growth: fast\n", fmt.Sprintf("f.yaml:%d:3: node_params.v_growth: ", line)},
		{"out of range", "  one_cut_per_episode: true\n  reduce_percent: 0\n", fmt.Sprintf("f.yaml:%d:3: node_params.reduce_percent: ", line+1)},
		{"needs another param", "  resume_on_drain: true\n  repeat_resume: true\n",
			fmt.Sprintf("f.yaml:%d:3: node_params.resume_on_drain: needs per_flow_rtt and repeat_resume", line)},
		{"the generator's k_base", "  k_base: 1MB\n", fmt.Sprintf("f.yaml:%d:3: node_params.k_base: the generator writes k_base itself", line)},
		{"the generator's rtt_est", "  rtt_est: 1ms\n", fmt.Sprintf("f.yaml:%d:3: node_params.rtt_est: the generator writes rtt_est itself (the family's rtt_est key)", line)},
		{"the generator's format", "  format: icmpv6\n", fmt.Sprintf("f.yaml:%d:3: node_params.format: the generator writes format itself", line)},
		{"the generator's recovery_step_percent", "  recovery_step_percent: 5\n",
			fmt.Sprintf("f.yaml:%d:3: node_params.recovery_step_percent: the generator writes recovery_step_percent itself", line)},
		{"given twice", "  per_flow_rtt: true\n  per_flow_rtt: false\n", fmt.Sprintf("f.yaml:%d:3: node_params.per_flow_rtt: given twice", line+1)},
		{"not a scalar", "  per_flow_rtt: [true]\n", fmt.Sprintf("f.yaml:%d:17: node_params.per_flow_rtt: want a scalar", line)},
		{"not a param name", "  \"per flow rtt\": true\n", fmt.Sprintf(`f.yaml:%d:3: node_params: "per flow rtt" is not a param name`, line)},
		{"not a mapping", " [per_flow_rtt]\n", fmt.Sprintf("f.yaml:%d:2: node_params: want a non-empty mapping", line)},
		// A value tagged a string stays a string, as a quoted one does
		// (it was passed on as the number 1).
		{"a number tagged a string", "  alpha: !!str 1\n", fmt.Sprintf(`f.yaml:%d:3: node_params.alpha: want a number, got "1"`, line)},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Parse("f.yaml", append(slices.Clone(base), "node_params:\n"+tt.params...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestTunerOptionsFamily: scenarios/family/tuner-options.yaml is the
// tuner's family (scenarios/family/tuner.yaml: its ranges, its seed sets)
// with the three options of the long-haul-cnp:options row on in every
// development scenario.
func TestTunerOptionsFamily(t *testing.T) {
	s, err := LoadFile("../../scenarios/family/tuner-options.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tuner, err := LoadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"one_cut_per_episode", "per_flow_rtt", "repeat_resume"}
	var got []string
	for _, np := range s.NodeParams {
		got = append(got, np.Key+"="+np.Value)
	}
	if !slices.Equal(got, []string{want[0] + "=true", want[1] + "=true", want[2] + "=true"}) {
		t.Errorf("node_params %v, want %v on", got, want)
	}
	c, tc := *s, *tuner
	c.File, c.NodeParams, tc.NodeParams = tuner.File, nil, nil
	if fmt.Sprintf("%+v", c) != fmt.Sprintf("%+v", tc) {
		t.Errorf("tuner-options.yaml is not tuner.yaml with other node_params:\n%+v\n%+v", c, tc)
	}
	for _, seed := range s.Train.List() {
		_, _, sc, err := s.Generate("train", seed)
		if err != nil {
			t.Fatal(err)
		}
		if p := sc.Mechanism.LongHaulCNP(); !p.OneCutPerEpisode || !p.PerFlowRTT || !p.RepeatResume {
			t.Errorf("train seed %d: options %v %v %v, want all on", seed, p.OneCutPerEpisode, p.PerFlowRTT, p.RepeatResume)
		}
	}
}

// addsParamLines generates the first eight train seeds of def and of with
// (def's spec with one more key) and checks that with's file is def's
// with the params lines added after the format line, the draw the same;
// it returns each seed's long-haul-cnp params, def's and with's.
func addsParamLines(t *testing.T, def, with *Spec, added string) map[int64][2]scenario.LongHaulCNP {
	t.Helper()
	out := map[int64][2]scenario.LongHaulCNP{}
	for _, seed := range def.Train.List()[:8] {
		d, text, sc, err := def.Generate("train", seed)
		if err != nil {
			t.Fatal(err)
		}
		dw, textWith, scWith, err := with.Generate("train", seed)
		if err != nil {
			t.Fatal(err)
		}
		if dw != d {
			t.Errorf("train seed %d: draw %+v with the key, want %+v", seed, dw, d)
		}
		format := regexp.MustCompile(`(?m)^    format: \S+\n`).FindString(string(text))
		if format == "" {
			t.Fatalf("train seed %d: no format line in\n%s", seed, text)
		}
		if want := strings.Replace(string(text), format, format+added, 1); string(textWith) != want {
			t.Errorf("train seed %d: the file differs from the one without the key in more than\n%s:\n%s", seed, added, textWith)
		}
		out[seed] = [2]scenario.LongHaulCNP{sc.Mechanism.LongHaulCNP(), scWith.Mechanism.LongHaulCNP()}
	}
	return out
}

// specWithout is the tuner's family file (specFile) without the lines of
// the top-level keys named (a key and its value on one line, as the file
// writes them): the base a test adds its own value of such a key to.
func specWithout(t *testing.T, keys ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	var base []byte
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(l, k+":") }) {
			base = append(base, l...)
		}
	}
	return base
}

// TestTunerFamilyNode: the tuner's family runs the node of session 36
// (docs/tuner.md, "A start and a growth trigger for a node that cuts to
// the overload (session 37)"): every generated train scenario's nodes
// wait under §5.7 only for a CE-marked flow and size every cut at a severe
// queue or on the growth trigger to the overload, and nothing else of the
// draft's defaults moves (#27's options stay off).
func TestTunerFamilyNode(t *testing.T) {
	s, err := LoadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, np := range s.NodeParams {
		got = append(got, np.Key+"="+np.Value)
	}
	if want := []string{"upstream_first_marked=true", "overload_cut=true", "overload_cut_growth=true"}; !slices.Equal(got, want) {
		t.Errorf("node_params %v, want %v", got, want)
	}
	for _, seed := range s.Train.List() {
		_, _, sc, err := s.Generate("train", seed)
		if err != nil {
			t.Fatal(err)
		}
		p := sc.Mechanism.LongHaulCNP()
		if !p.UpstreamFirst || !p.UpstreamFirstMarked || !p.OverloadCut || !p.OverloadCutGrowth || p.OneCutPerEpisode || p.PerFlowRTT || p.RepeatResume {
			t.Errorf("train seed %d: upstream_first %v marked %v, overload_cut %v growth %v, #27's options %v %v %v",
				seed, p.UpstreamFirst, p.UpstreamFirstMarked, p.OverloadCut, p.OverloadCutGrowth, p.OneCutPerEpisode, p.PerFlowRTT, p.RepeatResume)
		}
	}
}
