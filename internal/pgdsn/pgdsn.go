// Package pgdsn hides the passwords of a PostgreSQL connection string in
// the error pgx gives when it cannot parse one. pgx quotes the string in
// that error with its passwords masked, but only where they are written
// as its own patterns expect: libpq's keyword/value form allows white
// space around '=' ("password = s3cret"), and pgx's masking left such a
// password, or all but a space of it, in clear, for a command to print.
// It depends on pgx's pgconn and errline only.
package pgdsn

import (
	"errors"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lhcnp/lhcnp/internal/errline"
)

// kvPassword is a password or sslpassword keyword and its value as
// libpq's keyword/value grammar reads them (pgconn's parser alike): white
// space around '=', a value quoted in ' with \ escaping the next
// character (to the end of the string when unterminated), or a run of
// characters other than white space, \ escaping the next. Keywords are
// matched in any case: masking one too many costs nothing.
var kvPassword = regexp.MustCompile(`(?i)(^|[ \t\n\r\v\f])((?:ssl)?password)[ \t\n\r\v\f]*=[ \t\n\r\v\f]*` +
	`(?:'(?:\\(?s:.)|[^'\\])*(?:'|\\)?|(?:\\(?s:.)|[^ \t\n\r\v\f\\])*\\?)`)

// Hide is dsn with the value of every keyword/value password and
// sslpassword written "keyword=xxxxx". A URL's are left to pgx, which
// parses the URL to find them.
func Hide(dsn string) string {
	return kvPassword.ReplaceAllString(dsn, "${1}${2}=xxxxx")
}

// ErrorString is err's text on one line (errline.String) with the
// connection string that a pgconn.ParseConfigError in its chain quotes
// masked by Hide before pgx masks it its own way.
func ErrorString(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return errline.String(err)
	}
	hidden := *pe
	hidden.ConnString = Hide(pe.ConnString)
	// err may wrap pe in text of its own: replace pe's part of it.
	return errline.String(errors.New(strings.Replace(err.Error(), pe.Error(), hidden.Error(), 1)))
}
