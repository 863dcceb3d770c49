package store

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestErrorText: a path or name for an error message is kept whole up to
// MaxErrorPathBytes and cut there beyond, at a character's start, saying
// how long it was; one line of UTF-8 whatever it holds.
func TestErrorText(t *testing.T) {
	for _, tt := range []struct {
		desc, in, want string
	}{
		{"short", "/a/b[k=v]", "/a/b[k=v]"},
		{"at the bound", strings.Repeat("a", MaxErrorPathBytes), strings.Repeat("a", MaxErrorPathBytes)},
		{"one over", strings.Repeat("a", MaxErrorPathBytes+1), strings.Repeat("a", MaxErrorPathBytes) + "… (513 bytes)"},
		{"a character across the bound", strings.Repeat("a", MaxErrorPathBytes-1) + "é" + "bc",
			strings.Repeat("a", MaxErrorPathBytes-1) + "… (515 bytes)"},
		// A request's path may hold any character: the error stays one
		// line of UTF-8 (FuzzSet found an element name with a newline).
		{"line breaks and controls", "/a\nb[k=\r\t\x00\u0085\u2028]", `/a\nb[k=\r\t\x00\u0085\u2028]`},
		{"not UTF-8", "/a\xffb", `/a\xffb`},
		{"an escape across the bound", strings.Repeat("a", MaxErrorPathBytes-1) + "\n",
			strings.Repeat("a", MaxErrorPathBytes-1) + "… (512 bytes)"},
		{"U+FFFD itself", "/a\ufffdb", "/a\ufffdb"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := ErrorText(tt.in)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ErrorText (-want, +got):\n%s", d)
			}
			if !utf8.ValidString(got) {
				t.Errorf("ErrorText(%q) is not UTF-8", tt.in)
			}
		})
	}
	p := MustPath("/" + strings.Repeat("x", 1000))
	if got := ErrorPath(p); !strings.HasPrefix(got, "/xxx") || !strings.HasSuffix(got, "… (1001 bytes)") || len(got) > MaxErrorPathBytes+20 {
		t.Errorf("ErrorPath of a 1001-byte path: %q", got)
	}
}
