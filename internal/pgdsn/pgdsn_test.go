package pgdsn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgdsn"
)

// TestErrorStringHidesPasswords: a connection string that pgx cannot
// parse is quoted in its error; no form of a password libpq's grammar
// reads is left in the text. pgx's own masking left "password = SECRET",
// "password= SECRET" (all but the space), a tab before '=' and an
// sslpassword with spaces in clear.
func TestErrorStringHidesPasswords(t *testing.T) {
	for _, tt := range []struct{ desc, dsn, want string }{
		{"keyword/value", "host=h password=SECRET sslmode=bogus",
			"cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"spaces around =", "host=h password = SECRET sslmode=bogus",
			"cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"space after =", "host=h password= SECRET sslmode=bogus",
			"cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"tab before =", "host=h password\t=SECRET sslmode=bogus",
			"cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"line break after =", "host=h password=\nSECRET sslmode=bogus",
			"cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"quoted, spaces and an escaped quote", `host=h password = 'SEC\' RET' sslmode=bogus`,
			"cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"escaped space", `host=h password = SEC\ RET sslmode=bogus`,
			"cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"sslpassword with spaces", "host=h sslpassword = SECRET sslmode=bogus",
			"cannot parse `host=h sslpassword=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"password first", "password =SECRET host=h sslmode=bogus",
			"cannot parse `password=xxxxx host=h sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"unterminated quote", "host=h password = 'SEC RET",
			"cannot parse `host=h password=xxxxx`: failed to parse as keyword/value (unterminated quoted string in connection info string)"},
		{"URL (pgx's masking)", "postgres://u:SECRET@h:notaport/db?sslpassword=SECRET",
			"cannot parse `postgres://u:xxxxx@h:notaport/db?sslpassword=xxxxx`: invalid port"},
		{"a passwordless keyword left as it is", "host=h passwordless = x sslmode=bogus",
			"cannot parse `host=h passwordless = x sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := pgxpool.ParseConfig(tt.dsn)
			if err == nil {
				t.Fatalf("%q parsed", tt.dsn)
			}
			if got := pgdsn.ErrorString(err); got != tt.want {
				t.Errorf("ErrorString:\n got %s\nwant %s", got, tt.want)
			}
			wrapped := fmt.Errorf("db.dsn: %w", err)
			if got := pgdsn.ErrorString(wrapped); got != "db.dsn: "+tt.want || strings.Contains(got, "SEC") {
				t.Errorf("ErrorString of a wrapped error:\n got %s\nwant db.dsn: %s", got, tt.want)
			}
		})
	}
}

// TestErrorStringOtherErrors: an error with no connection string in it
// is errline.String's text.
func TestErrorStringOtherErrors(t *testing.T) {
	err := fmt.Errorf("connect:\n\trefused\n\trefused")
	if got, want := pgdsn.ErrorString(err), "connect: refused"; got != want {
		t.Errorf("ErrorString = %q, want %q", got, want)
	}
}

// TestRedact: a connection string as a command prints it has no password.
func TestRedact(t *testing.T) {
	for _, tt := range []struct{ desc, dsn, want string }{
		{"URL", "postgres://u:SECRET@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgresql URL, an '@' in the password", "postgresql://u:SE@CRET@h/db?sslmode=require",
			"postgresql://u:xxxxx@h/db?sslmode=require"},
		{"URL without a password", "postgres://lhcnp@127.0.0.1:15432/lhcnp", "postgres://lhcnp@127.0.0.1:15432/lhcnp"},
		{"URL, passwords as parameters", "postgres://u@h1:1,h2:2/db?password=SECRET&sslpassword=SECRET&sslmode=require",
			"postgres://u@h1:1,h2:2/db?password=xxxxx&sslpassword=xxxxx&sslmode=require"},
		{"keyword/value", "host=h password = 'SEC RET' dbname=db", "host=h password=xxxxx dbname=db"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := pgdsn.Redact(tt.dsn); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.dsn, got, tt.want)
			}
		})
	}
}

// TestLowerScheme: a URL whose scheme is not in lower case is read as the
// URL it is (RFC 3986 §3.1), its password never a run-time parameter's
// name. Before, pgx read "Postgresql://u:SECRET@h/db?sslmode=disable" as
// keyword/value text: a parameter named by the URL up to its '=', the
// password in it, sent to the server at the default socket.
func TestLowerScheme(t *testing.T) {
	for _, dsn := range []string{
		"POSTGRES://u:SECRET@h:5433/db?sslmode=disable",
		"Postgresql://u:SECRET@h:5433/db?sslmode=disable",
		"postgres://u:SECRET@h:5433/db?sslmode=disable",
	} {
		c, err := pgxpool.ParseConfig(pgdsn.LowerScheme(dsn))
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		cc := c.ConnConfig
		if cc.Host != "h" || cc.Port != 5433 || cc.User != "u" || cc.Password != "SECRET" || cc.Database != "db" || len(cc.RuntimeParams) != 0 {
			t.Errorf("%s: host %q port %d user %q database %q run-time parameters %q; want h 5433 u db and none",
				dsn, cc.Host, cc.Port, cc.User, cc.Database, cc.RuntimeParams)
		}
		if r := pgdsn.Redact(dsn); strings.Contains(r, "SECRET") {
			t.Errorf("Redact(%s) = %s", dsn, r)
		}
	}
	if got := pgdsn.LowerScheme("host=h password=x"); got != "host=h password=x" {
		t.Errorf("keyword/value text changed: %q", got)
	}
}
