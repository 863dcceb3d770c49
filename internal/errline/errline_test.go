package errline

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tt := range []struct{ desc, err, want string }{
		{"one line", "db: refused", "db: refused"},
		{"pgx's attempts, one twice",
			"failed to connect to `user=u database=x`:\n\t127.0.0.1:1 (127.0.0.1): dial error: connection refused\n\t127.0.0.1:1 (127.0.0.1): dial error: connection refused",
			"failed to connect to `user=u database=x`: 127.0.0.1:1 (127.0.0.1): dial error: connection refused"},
		{"two attempts that differ",
			"failed:\n\ta:1 (a): tls error: server refused TLS connection\n\ta:1 (a): password authentication failed",
			"failed: a:1 (a): tls error: server refused TLS connection a:1 (a): password authentication failed"},
		{"white space", "a  b\t c\n\n", "a b c"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := String(errors.New(tt.err)); got != tt.want {
				t.Errorf("String:\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	inner := errors.New("a\n\ta")
	err := Of(inner)
	if err.Error() != "a" || !errors.Is(err, inner) {
		t.Errorf("Of: %q (wraps %v)", err, errors.Is(err, inner))
	}
	if Of(nil) != nil {
		t.Error("Of(nil) is not nil")
	}
}

// TestReplaceAttr: a log record's error value is its one line; other
// values pass as they are.
func TestReplaceAttr(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}))
	err := errors.New("failed to connect:\n\t127.0.0.1:1: dial error: refused\n\t127.0.0.1:1: dial error: refused")
	log.Warn("tuner cycle", "err", err, "n", 3, "s", "a\nb")
	got := b.String()
	for _, want := range []string{`err="failed to connect: 127.0.0.1:1: dial error: refused"`, "n=3", `s="a\nb"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
}
