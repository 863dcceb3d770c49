// Package grafanasql reads the SQL of a Grafana dashboard (its template
// variables, annotations and panel queries) and expands it as Grafana's
// PostgreSQL data source does before sending it: the time macros become the
// dashboard's range, a single-valued variable its raw value. Tests use it to
// run every query of deploy/grafana/dashboards against a real database.
//
// It depends on pgx and the standard library.
package grafanasql

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Query is one SQL query of the dashboard.
type Query struct {
	// Where names it: "variable target", "annotation NAME", "panel TITLE A".
	Where      string
	SQL        string
	Format     string // time_series or table
	Datasource string // the data source's uid
}

// Variable is a template variable, whose query gives its choices (a
// constant's query is its value).
type Variable struct {
	Name  string
	Type  string
	Query string
}

// Dashboard is the SQL of a dashboard.
type Dashboard struct {
	UID       string
	Titles    []string // panel titles, in order
	Variables []Variable
	Queries   []Query // annotations, then panels
}

type target struct {
	RefID      string `json:"refId"`
	RawSQL     string `json:"rawSql"`
	Format     string `json:"format"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
}

// Parse reads a dashboard's JSON model.
func Parse(data []byte) (Dashboard, error) {
	var m struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string   `json:"title"`
			Targets []target `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []Variable `json:"list"`
		} `json:"templating"`
		Annotations struct {
			List []struct {
				Name   string  `json:"name"`
				Target *target `json:"target"`
			} `json:"list"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Dashboard{}, fmt.Errorf("grafana dashboard: %w", err)
	}
	d := Dashboard{UID: m.UID, Variables: m.Templating.List}
	add := func(where string, t target) {
		d.Queries = append(d.Queries, Query{Where: where, SQL: t.RawSQL, Format: t.Format, Datasource: t.Datasource.UID})
	}
	for _, a := range m.Annotations.List {
		if a.Target != nil {
			add("annotation "+a.Name, *a.Target)
		}
	}
	for _, p := range m.Panels {
		d.Titles = append(d.Titles, p.Title)
		for _, t := range p.Targets {
			add("panel "+p.Title+" "+t.RefID, t)
		}
		if len(p.Targets) == 0 {
			return d, fmt.Errorf("grafana dashboard: panel %q has no query", p.Title)
		}
	}
	return d, nil
}

var (
	timeFilter = regexp.MustCompile(`\$__timeFilter\(([^)]+)\)`)
	anyMacro   = regexp.MustCompile(`\$__\w+`)
	variable   = regexp.MustCompile(`\$\{?(\w+)\}?`)
)

// Expand replaces the macros $__timeFilter(col), $__timeFrom() and
// $__timeTo() by the range [from, to], and $name or ${name} by vars[name].
// A macro it does not know or a variable missing from vars is an error.
func Expand(sql string, from, to time.Time, vars map[string]string) (string, error) {
	lit := func(ts time.Time) string { return "'" + ts.UTC().Format(time.RFC3339Nano) + "'" }
	sql = timeFilter.ReplaceAllString(sql, "$1 BETWEEN "+lit(from)+" AND "+lit(to))
	sql = strings.ReplaceAll(sql, "$__timeFrom()", lit(from))
	sql = strings.ReplaceAll(sql, "$__timeTo()", lit(to))
	if m := anyMacro.FindString(sql); m != "" {
		return "", fmt.Errorf("macro %s is not expanded here", m)
	}
	var missing []string
	out := variable.ReplaceAllStringFunc(sql, func(m string) string {
		name := variable.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, "$"+name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("variables %s have no value", strings.Join(missing, ", "))
	}
	return out, nil
}

// Querier is the part of a pgx pool Run uses.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Result is what one query returned.
type Result struct {
	Query
	Rows    int
	Columns []string
	Err     error
}

// Run runs the dashboard as Grafana would over [from, to]: each variable's
// query in order (each may use the ones before it), taking choose[name],
// which must be among its choices; then every query with those values.
// An error from a variable stops it; a query's error is in its Result.
func Run(ctx context.Context, db Querier, d Dashboard, from, to time.Time, choose map[string]string) ([]Result, error) {
	vars := map[string]string{}
	for _, v := range d.Variables {
		if v.Type == "constant" {
			vars[v.Name] = v.Query
			continue
		}
		sql, err := Expand(v.Query, from, to, vars)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		choices, err := firstColumn(ctx, db, sql)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		if !slices.Contains(choices, choose[v.Name]) {
			return nil, fmt.Errorf("variable %s: choices %q lack %q", v.Name, choices, choose[v.Name])
		}
		vars[v.Name] = choose[v.Name]
	}
	var out []Result
	for _, q := range d.Queries {
		r := Result{Query: q}
		sql, err := Expand(q.SQL, from, to, vars)
		if err == nil {
			r.Rows, r.Columns, err = count(ctx, db, sql)
		}
		r.Err = err
		out = append(out, r)
	}
	return out, nil
}

func firstColumn(ctx context.Context, db Querier, sql string) ([]string, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprint(vals[0]))
	}
	return out, rows.Err()
}

func count(ctx context.Context, db Querier, sql string) (int, []string, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var cols []string
	for _, f := range rows.FieldDescriptions() {
		cols = append(cols, f.Name)
	}
	n := 0
	for rows.Next() {
		n++
	}
	return n, cols, rows.Err()
}
