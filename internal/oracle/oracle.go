// Package oracle decides what a test does when an oracle it checks against
// (an outside tool: gnmic, gnmi_cli) is missing: it skips, saying why and
// how to provide the tool, unless CI=true or LHCNP_ORACLES=required (the
// Makefile's default), when it fails, so that a check meant to run is never
// silently passed over. Test support only; it depends on the standard
// library alone.
package oracle

import (
	"os"
	"testing"
)

// Required reports whether a missing oracle fails the test: CI=true or
// LHCNP_ORACLES=required.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("LHCNP_ORACLES") == "required"
}

// Missing ends t for want of an oracle; err says which and how to provide
// it. It fails t when Required, and skips it otherwise.
func Missing(t testing.TB, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%v (required: CI=true or LHCNP_ORACLES=required)", err)
	}
	t.Skipf("SKIPPED: %v", err)
}
