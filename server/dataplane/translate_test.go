package dataplane_test

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestMetricTypeUnspecifiedSendsTypeZero: /lhcnp/global/config/metric-type
// UNSPECIFIED ("Metric Type 0: no metric, or opaque context") makes the
// Long-haul CNPs carry Metric Type 0 and value 0. It failed before the
// translation set the node's NoMetric: UNSPECIFIED became the node's zero
// value, the metric of the trigger that fired, so the CNPs carried queue
// depth (Metric Type 1) and its value.
func TestMetricTypeUnspecifiedSendsTypeZero(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	if err := r.setMany([][2]string{
		{"/lhcnp/global/config/metric-type", `"UNSPECIFIED"`},
		{q0 + "/config/kmax", `"1000000"`},
	}); err != nil {
		t.Fatal(err)
	}
	r.run(t, 6*engine.Millisecond)
	if got := r.uint(t, q0+"/state/counters/cnp-rocev2-sent"); got == 0 {
		t.Fatal("no Long-haul CNP sent: the test needs one")
	}
	if got := r.getJSON(t, q0+"/state/last-cnp/metric-type"); !strings.Contains(got, "UNSPECIFIED") {
		t.Errorf("metric-type UNSPECIFIED: last CNP's metric-type = %s, want UNSPECIFIED (type 0)", got)
	}
	if got := r.uint(t, q0+"/state/last-cnp/metric-value"); got != 0 {
		t.Errorf("metric-type UNSPECIFIED: last CNP's metric-value = %d, want 0 (no metric)", got)
	}
	if got := r.getJSON(t, "/lhcnp/global/state/metric-type"); !strings.Contains(got, "UNSPECIFIED") {
		t.Errorf("metric-type UNSPECIFIED: its state echo = %s", got)
	}
}

// TestUint64LeavesAboveInt64: the uint64 byte and rate leaves (v-growth,
// k-base, kmax, port-rate) take their YANG range 1..max, the values above
// 2^63-1 (the natural "never" of a threshold) held at the node's top,
// which the state echoes and runs; a BDP-adaptive K_max at a port rate
// that high holds there too. It failed before the translation clamped
// them: int64() wrapped them negative and the node refused them naming
// its Go field ("v-growth-bytes-per-sec: negative"), and the BDP K_max
// wrapped past the int64 top back to K_base.
func TestUint64LeavesAboveInt64(t *testing.T) {
	const (
		top     = `"18446744073709551615"`
		nodeTop = 1<<63 - 1
		wan     = "/lhcnp/interfaces/interface[name=wan]"
		bdp     = `"BDP_ADAPTIVE"`
	)
	for _, tt := range []struct {
		desc string
		set  [][2]string
		read string // a leaf that runs the value
	}{
		{"v-growth", [][2]string{{q0 + "/config/v-growth", top}}, q0 + "/state/v-growth"},
		{"kmax", [][2]string{{q0 + "/config/kmax", top}}, q0 + "/state/effective-kmax"},
		{"k-base", [][2]string{{q0 + "/config/kmax-mode", bdp}, {q0 + "/config/k-base", top}}, q0 + "/state/effective-kmax"},
		{"port-rate", [][2]string{{wan + "/config/port-rate", top}}, wan + "/state/effective-port-rate"},
		{"port-rate, bdp k-max", [][2]string{{q0 + "/config/kmax-mode", bdp},
			{wan + "/config/port-rate", top}, {wan + "/config/rtt-est", strconv.Itoa(1<<32 - 1)}}, q0 + "/state/effective-kmax"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t)
			r.run(t, engine.Millisecond)
			if err := r.setMany(tt.set); err != nil {
				t.Fatalf("set %v (inside YANG's range 1..max): %v", tt.set, err)
			}
			r.run(t, 3*engine.Millisecond)
			if got := r.uint(t, tt.read); got != nodeTop {
				t.Errorf("%s = %d, want the node's top %d", tt.read, got, uint64(nodeTop))
			}
		})
	}
	// An explicit K_min that high is below no K_max: refused, naming it.
	r := newRig(t)
	err := r.setMany([][2]string{{q0 + "/config/kmin-mode", `"EXPLICIT"`}, {q0 + "/config/kmin", top}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), q0+"/config/kmin") {
		t.Errorf("kmin %s: %v, want InvalidArgument naming %s/config/kmin", top, err, q0)
	}
}

// TestExplicitKmaxOneNamesYANGPath: kmax 1 with kmax-mode EXPLICIT, inside
// the YANG range 1..max but below the node's smallest explicit K_max
// (lhcnp.MinExplicitKMaxBytes, 2), is refused naming the leaf's path. It
// failed before the model's rules (schema.CheckRules) said so: the node
// refused it, naming its own field "interfaces[n1:2].queues[0].k-max-bytes".
func TestExplicitKmaxOneNamesYANGPath(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	err := r.setJSON(t, q0+"/config/kmax", `"1"`)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), q0+"/config/kmax") {
		t.Errorf("kmax 1 (EXPLICIT): %v, want InvalidArgument naming %s/config/kmax", err, q0)
	}
}

// TestRTTSourceReportedRefused: rtt-source REPORTED is refused naming the
// leaf, with the sources that work: nothing brings a node a receiver's
// report (no draft defines one), and taken it ran as STATIC while the
// state said REPORTED. The configuration stays as it was.
func TestRTTSourceReportedRefused(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	const leaf = "/lhcnp/interfaces/interface[name=wan]/config/rtt-source"
	err := r.setJSON(t, leaf, `"REPORTED"`)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), leaf) || !strings.Contains(err.Error(), "PROBED") {
		t.Fatalf("rtt-source REPORTED: %v, want InvalidArgument naming %s and the sources that work", err, leaf)
	}
	if got := r.getJSON(t, "/lhcnp/interfaces/interface[name=wan]/state/rtt-source"); !strings.Contains(got, "STATIC") {
		t.Errorf("after the refused Set the state's rtt-source = %s, want STATIC", got)
	}
	if err := r.setJSON(t, leaf, `"PROBED"`); err != nil {
		t.Errorf("rtt-source PROBED: %v", err)
	}
}
