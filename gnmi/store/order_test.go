package store

import "testing"

// TestComparePaths: key values of digits compare by value, any other
// text as text, a key value's escaped "]" or "," and its slashes within
// the value.
func TestComparePaths(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"/l/q[id=2]/c", "/l/q[id=10]/c", -1},
		{"/l/q[id=10]/c", "/l/q[id=10]/b", 1},
		{"/l/i[name=wan10]/q[id=3]", "/l/i[name=wan2]/q[id=1]", -1},
		{"/l/r[prefix=9.0.0.0/8]/p", "/l/r[prefix=10.0.0.0/8]/p", 1},
		{`/l/i[name=a\]9]/q[id=1]`, `/l/i[name=a\]10]/q[id=1]`, 1},
		{"/l/f[a=1,b=20]", "/l/f[a=1,b=3]", 1},
		{"/l/q[id=2]", "/l/q[id=2]/c", -1},
		{"/l/q[id=7]", "/l/q[id=7]", 0},
	} {
		if got := ComparePaths(tt.a, tt.b); got != tt.want {
			t.Errorf("ComparePaths(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := ComparePaths(tt.b, tt.a); got != -tt.want {
			t.Errorf("ComparePaths(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}
