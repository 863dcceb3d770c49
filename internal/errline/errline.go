// Package errline makes an error's text the one line a command prints:
// pgx lists every connection attempt on a line of its own, and with
// sslmode=prefer (libpq's default) tries each address twice, with TLS and
// without, so an unreachable server's dial error came twice. It reads the
// text only and depends on nothing.
package errline

import "strings"

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
