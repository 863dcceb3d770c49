package collector

import (
	"testing"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/placement"
)

// TestHandoverKindsAreMetricLabels: the collector counts a handover under
// its placement.Kind, which must be the label collector/collectormetrics documents.
func TestHandoverKindsAreMetricLabels(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		kind  placement.Kind
		label string
	}{
		{"make-before-break", placement.MakeBeforeBreak, collectormetrics.HandoverMakeBeforeBreak},
		{"break-before-make", placement.BreakBeforeMake, collectormetrics.HandoverBreakBeforeMake},
		{"takeover", placement.Takeover, collectormetrics.HandoverTakeover},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if string(tt.kind) != tt.label {
				t.Errorf("placement kind %q, metrics label %q", tt.kind, tt.label)
			}
		})
	}
}
