package build

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// The dcqcn block's profile picks the base the other keys override: NVIDIA's
// firmware defaults or the paper's set (reaction and notification point).
func TestDCQCNProfile(t *testing.T) {
	base, err := os.ReadFile("../../scenarios/incast-dcqcn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Drop the file's own dcqcn block: each case brings its own.
	text := string(base)
	if i := strings.Index(text, "\ndcqcn:"); i >= 0 {
		j := strings.Index(text[i+1:], "\n\n")
		text = text[:i+1] + text[i+1+j+2:]
	}
	nvidia, paper := netsim.DefaultHostConfig(), netsim.DefaultHostConfig()
	paper.DCQCN, paper.NP = netsim.PaperDCQCN(), netsim.PaperNP()
	paperF3 := paper
	paperF3.DCQCN.Threshold = 3
	nvidiaPerCNP := nvidia
	nvidiaPerCNP.DCQCN.AlphaPerCNP = true
	tests := []struct {
		desc    string
		block   string
		want    netsim.HostConfig
		wantErr string
	}{
		{desc: "no block: the firmware", want: nvidia},
		{desc: "nvidia", block: "dcqcn:\n  profile: nvidia\n", want: nvidia},
		{desc: "paper", block: "dcqcn:\n  profile: paper\n", want: paper},
		{desc: "paper with an override", block: "dcqcn:\n  profile: paper\n  threshold: 3\n", want: paperF3},
		{desc: "the paper's alpha timing alone", block: "dcqcn:\n  alpha_per_cnp: true\n", want: nvidiaPerCNP},
		{desc: "unknown profile", block: "dcqcn:\n  profile: mellanox\n", wantErr: `dcqcn.profile: unknown profile "mellanox"`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			sc, err := scenario.Parse("incast.yaml", []byte(text+"\n"+tt.block))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := hostConfig(sc)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.MTUBytes, want.AckEveryPackets = got.MTUBytes, got.AckEveryPackets // the nic block's
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("host config (-want +got):\n%s", diff)
			}
		})
	}
}

// The nic block's loss recovery reaches every RNIC: go-back-n (the
// default) with its timeout exponent (4.096 µs · 2^t, rdma_cm's t = 17
// unless said), or none.
func TestLossRecovery(t *testing.T) {
	base, err := os.ReadFile("../../scenarios/incast-dcqcn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		block   string
		gbn     bool
		timeout int64 // ns
	}{
		{"", true, 536870912},
		{"  loss_recovery: none\n", false, 536870912},
		{"  loss_recovery: go-back-n\n", true, 536870912},
		{"  loss_recovery: go-back-n\n  local_ack_timeout: 10\n", true, 4194304},
	} {
		text := strings.Replace(string(base), "\nnic:\n", "\nnic:\n"+tt.block, 1)
		sc, err := scenario.Parse("incast.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		got, err := hostConfig(sc)
		if err != nil {
			t.Fatal(err)
		}
		if got.GoBackN != tt.gbn || int64(got.AckTimeout) != tt.timeout {
			t.Errorf("%q: go-back-n %v, timeout %v; want %v, %d ns", tt.block, got.GoBackN, got.AckTimeout, tt.gbn, tt.timeout)
		}
	}
}
