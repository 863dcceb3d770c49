// Package errline makes an error's text the one line a command prints:
// pgx lists every connection attempt on a line of its own, and with
// sslmode=prefer (libpq's default) tries each address twice, with TLS and
// without, so an unreachable server's dial error came twice. It reads the
// text only and depends on nothing but the standard library.
package errline

import (
	"log/slog"
	"strings"
)

// String is err's text on one line: each line's runs of white space made
// one space, a line equal to an earlier one left out, the lines joined
// by a space.
func String(err error) string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return strings.Join(out, " ")
}

// Of is err with String's text; errors.Is and As see err.
func Of(err error) error {
	if err == nil {
		return nil
	}
	return &oneLine{msg: String(err), err: err}
}

type oneLine struct {
	msg string
	err error
}

func (e *oneLine) Error() string { return e.msg }
func (e *oneLine) Unwrap() error { return e.err }

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that logs an error
// value as String's one line: the commands' logs (lhcnp collector, tuner,
// switch, lab.log) showed a database error as pgx gave it, each attempt
// on a line of its own and the same attempt twice, escaped into one
// record.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindAny {
		if err, ok := a.Value.Any().(error); ok && err != nil {
			return slog.String(a.Key, String(err))
		}
	}
	return a
}
