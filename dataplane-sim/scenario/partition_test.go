package scenario

import (
	"strings"
	"testing"
)

const cutFile = `name: cut
duration: 1ms
sample_interval: 10us
topology:
  hosts:
    - {name: a}
    - {name: b, partition: east}
  switches:
    - {name: sa, partition: west}
    - {name: sb, partition: east}
  links:
    - {a: a, b: sa, rate: 10Gbps, delay: 1us}
    - {a: b, b: sb, rate: 10Gbps, delay: 1us}
    - {name: wan, a: sa, b: sb, rate: 10Gbps, delay: %s}
traffic:
  flows:
    - {name: f, src: a, dst: b, start: 0s}
%s`

func TestPartitions(t *testing.T) {
	sc, err := Parse("cut.yaml", []byte(strings.Replace(strings.Replace(cutFile, "%s", "1ms", 1), "%s", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sc.Partitions(), ","); got != "west,east" {
		t.Errorf("Partitions = %s, want west,east (first appearance: host a in its switch's, then b)", got)
	}
	for node, want := range map[string]int{"a": 0, "b": 1, "sa": 0, "sb": 1} {
		if got := sc.PartitionOf(node); got != want {
			t.Errorf("PartitionOf(%s) = %d, want %d", node, got, want)
		}
	}
	if sc.Hosts[0].Partition != "west" {
		t.Errorf("host a is in %q, want its switch's partition west", sc.Hosts[0].Partition)
	}
}

// TestPartitionWithoutLookahead: a link between partitions with no delay,
// or an event that takes its delay to zero, is an error naming the file,
// line and key.
func TestPartitionWithoutLookahead(t *testing.T) {
	for _, tt := range []struct {
		desc, delay, events, want string
	}{
		{"zero delay", "0s", "", "cut.yaml:14:54: topology.links[2].delay: link wan joins partitions west and east without delay"},
		{"event to zero", "1ms", "events:\n  - {at: 1us, kind: link-delay, target: wan, value: 0s}\n",
			"cut.yaml:19:53: events[0].value: link wan joins two partitions: its delay must stay positive"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			src := strings.Replace(strings.Replace(cutFile, "%s", tt.delay, 1), "%s", tt.events, 1)
			_, err := Parse("cut.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
