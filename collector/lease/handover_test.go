package lease

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHandover(t *testing.T) {
	for _, tt := range []struct {
		desc    string
		payload string
		want    Handover
		wantErr bool
	}{
		{"ready", Handover{Target: "sw1", Ready: "c2", SyncPoint: 1_700_000_000_123_456_789}.payload(),
			Handover{Target: "sw1", Ready: "c2", SyncPoint: 1_700_000_000_123_456_789}, false},
		{"ready, stream session 3", `{"target":"sw1","ready":"c2","session":3,"sync_point":42}`,
			Handover{Target: "sw1", Ready: "c2", Session: 3, SyncPoint: 42}, false},
		{"not ready", Handover{Target: "sw1", NotReady: "c2", Session: 3}.payload(), Handover{Target: "sw1", NotReady: "c2", Session: 3}, false},
		{"a negative session", `{"target":"sw1","ready":"c2","session":-1}`, Handover{}, true},
		{"released", Handover{Target: "sw1", Released: "c1"}.payload(), Handover{Target: "sw1", Released: "c1"}, false},
		{"an unknown member is ignored", `{"target":"sw1","ready":"c2","later":true}`, Handover{Target: "sw1", Ready: "c2"}, false},
		{"no target", `{"ready":"c2"}`, Handover{}, true},
		{"not JSON", `sw1 ready`, Handover{}, true},
		{"a sync point that is not a number", `{"target":"sw1","sync_point":"soon"}`, Handover{}, true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := ParseHandover(tt.payload)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseHandover(%q) error %v, want error %v", tt.payload, err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseHandover(%q) (-want +got):\n%s", tt.payload, d)
			}
		})
	}
}

// FuzzParseHandover: any payload decodes or errs, never panics, and what
// decodes has a target and encodes back to itself.
func FuzzParseHandover(f *testing.F) {
	f.Add(Handover{Target: "sw1", Ready: "c2", SyncPoint: 42}.payload())
	f.Add(`{"target":"","released":"x"}`)
	f.Add(Handover{Target: "sw1", NotReady: "c2", Session: 7}.payload())
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, payload string) {
		h, err := ParseHandover(payload)
		if err != nil {
			return
		}
		if h.Target == "" {
			t.Fatalf("ParseHandover(%q) = %+v without a target", payload, h)
		}
		again, err := ParseHandover(h.payload())
		if err != nil || again != h {
			t.Fatalf("%+v encodes to %q, which decodes to %+v, %v", h, h.payload(), again, err)
		}
	})
}
