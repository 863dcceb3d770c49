// Package pgdsn hides the passwords of a PostgreSQL connection string in
// the error pgx gives when it cannot parse one. pgx quotes the string in
// that error with its passwords masked, but only where they are written
// as its own patterns expect: libpq's keyword/value form allows white
// space around '=' ("password = s3cret"), and pgx's masking left such a
// password, or all but a space of it, in clear, for a command to print.
// Redact masks them in a connection string a command prints. It depends
// on pgx's pgconn and errline only.
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

// LowerScheme is dsn with a postgres:// or postgresql:// scheme written in
// any case ("POSTGRES://", "Postgresql://") in lower case, for pgx to read
// it as a URL: RFC 3986 §3.1 makes a scheme case-insensitive, and pgx (as
// libpq) looks for the lower-case prefixes only. Otherwise pgx read such a
// URL as keyword/value text: with an '=' anywhere in it (a query's
// "?sslmode=disable") the whole URL up to it, password included, became
// the name of a run-time parameter sent to the server (which quotes it
// back in its error and its log), and the connection went to the default
// socket. Any other dsn is returned as it is.
func LowerScheme(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")) {
		return strings.ToLower(scheme) + "://" + rest
	}
	return dsn
}

// Redact is dsn, a connection string pgx parsed, as a command may print
// it: every password "xxxxx", a URL's (postgres:// or postgresql://) in
// its user information and its password and sslpassword parameters, a
// keyword/value string's as Hide masks them.
func Redact(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok || (!strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql")) {
		return Hide(dsn)
	}
	beforeQuery, query, hasQuery := strings.Cut(rest, "?")
	// The user information ends at the last '@' (net/url's reading, and
	// a password may hold an '@'); one in the path makes it mask more.
	if at := strings.LastIndex(beforeQuery, "@"); at >= 0 {
		if user, _, hasPassword := strings.Cut(beforeQuery[:at], ":"); hasPassword {
			beforeQuery = user + ":xxxxx" + beforeQuery[at:]
		}
	}
	if !hasQuery {
		return scheme + "://" + beforeQuery
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		if k, _, _ := strings.Cut(p, "="); k == "password" || k == "sslpassword" {
			params[i] = k + "=xxxxx"
		}
	}
	return scheme + "://" + beforeQuery + "?" + strings.Join(params, "&")
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
