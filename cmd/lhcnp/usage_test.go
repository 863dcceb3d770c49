package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// usageForms are the forms of `lhcnp ARGS -h`'s usage: its "usage: lhcnp
// …" line and the "       lhcnp …" lines after it, without "lhcnp ".
func usageForms(t *testing.T, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run(append(slices.Clone(args), "-h"), &stdout, &stderr)
	var forms []string
	for _, l := range strings.Split(stdout.String()+stderr.String(), "\n") {
		if u, ok := strings.CutPrefix(l, "usage: lhcnp "); ok && forms == nil {
			forms = append(forms, u)
		} else if u, ok := strings.CutPrefix(l, "       lhcnp "); ok && forms != nil {
			forms = append(forms, u)
		} else if forms != nil {
			break
		}
	}
	if forms == nil {
		t.Fatalf("lhcnp %s -h: no usage line in\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	}
	return forms
}

// summaryUsage is a command's usage as another help text quotes it: "(sim
// run SCENARIO --out DIR)" in lhcnp -h, "lhcnp tuner hold|release …: …" in
// lhcnp tuner -h.
var summaryUsage = regexp.MustCompile(`(?m)\(([a-z]+ [^()]*(?:\([^()]*\)[^()]*)*)\)$|^[ \t]*lhcnp ([a-z]+ [a-z|]+[^:\n]*)`)

// TestHelpQuotesTheUsage: where a help text quotes a command's usage (the
// command list of lhcnp -h, the hold and release line of lhcnp tuner -h,
// lab's and sim eval's other forms), what it quotes is the start of that
// command's own usage line, every subcommand of an "a|b" word alike. lhcnp
// -h gave migrate's --db (an older name) where migrate -h and README give
// --db.dsn, and lhcnp tuner -h required --config of hold and release,
// which take --db instead as README's tour has them do.
func TestHelpQuotesTheUsage(t *testing.T) {
	var helps [][]string
	cmds := commands()
	for name, c := range cmds {
		helps = append(helps, []string{name})
		for _, sub := range c.subs {
			helps = append(helps, []string{name, sub})
		}
	}
	helps = append(helps, nil)
	checked := 0
	for _, h := range helps {
		var stdout, stderr bytes.Buffer
		run(append(slices.Clone(h), "-h"), &stdout, &stderr)
		for _, m := range summaryUsage.FindAllStringSubmatch(stdout.String()+stderr.String(), -1) {
			for _, quoted := range strings.Split(m[1]+m[2], "; ") {
				quoted, _, _ = strings.Cut(quoted, ":")
				words := strings.Fields(quoted)
				c, ok := cmds[words[0]]
				if !ok {
					continue
				}
				subs := []string{""}
				if len(words) > 1 && slices.Contains(c.subs, strings.Split(words[1], "|")[0]) {
					subs = strings.Split(words[1], "|")
				}
				for _, sub := range subs {
					args, q := []string{words[0]}, words
					if sub != "" {
						args = append(args, sub)
						q = append([]string{words[0], sub}, words[2:]...)
					}
					if slices.Equal(args, h) {
						continue // another form of the command's own usage (sim eval --tuned-only)
					}
					want := strings.Join(q, " ")
					got := usageForms(t, args...)
					if !slices.ContainsFunc(got, func(f string) bool { return strings.HasPrefix(f, want) }) {
						t.Errorf("%s quotes %q; lhcnp %s -h says %q", strings.Join(append([]string{"lhcnp"}, h...), " ")+" -h", want, strings.Join(args, " "), got)
					}
					checked++
				}
			}
		}
	}
	if checked < 6 {
		t.Errorf("%d quoted usages checked; lhcnp -h, lab -h, tuner -h and sim eval -h quote more: is the pattern broken?", checked)
	}
}

// flagDefaults reads the defaults `lhcnp ARGS -h` prints: "(default X)" in
// a flag's help; a flag without one defaults to its zero value.
func flagDefaults(help string) map[string]string {
	d := map[string]string{}
	var name string
	for _, l := range strings.Split(help, "\n") {
		if f, ok := strings.CutPrefix(l, "  -"); ok {
			name, _, _ = strings.Cut(f, " ")
			d[name] = ""
		} else if name != "" && strings.HasPrefix(l, "    \t") {
			if _, def, ok := strings.Cut(l, "(default "); ok {
				d[name] = strings.TrimSuffix(def, ")")
			}
		}
	}
	return d
}

// bracketed are the optional parts of a usage line, [ … ], nested too.
var bracketed = regexp.MustCompile(`\[[^\[\]]*\]`)

// TestUsageRequiresOnlyRequiredFlags: a flag a usage line shows outside
// [ ] has no default of its own (the command needs it, or it is one of a
// ( | ) choice): lhcnp sim generate and sim eval showed --family FILE and
// --set as if required, where docs/scenarios.md gives their defaults
// (scenarios/family/tuner.yaml; train, both) and the commands run without
// them.
func TestUsageRequiresOnlyRequiredFlags(t *testing.T) {
	unset := map[string]bool{"": true, "0": true, "false": true, `""`: true, "-1": true /* --queue's "not given" */}
	for name, c := range commands() {
		for _, sub := range append([]string{""}, c.subs...) {
			args := []string{name}
			if sub != "" {
				args = append(args, sub)
			}
			var stdout, stderr bytes.Buffer
			run(append(slices.Clone(args), "-h"), &stdout, &stderr)
			defaults := flagDefaults(stdout.String() + stderr.String())
			for _, form := range usageForms(t, args...) {
				if f := strings.Fields(form); sub == "" && len(f) > 1 && slices.Contains(c.subs, f[1]) {
					continue // a subcommand's form (lhcnp lab probe in lab -h): its flags are its own
				}
				for s := ""; s != form; {
					s, form = form, bracketed.ReplaceAllString(form, "")
				}
				for _, w := range strings.Fields(form) {
					flag, ok := strings.CutPrefix(strings.Trim(w, "()"), "--")
					if def, known := defaults[flag]; ok && known && !unset[def] {
						t.Errorf("lhcnp %s -h shows %s as required; its default is %s", strings.Join(args, " "), w, def)
					}
				}
			}
		}
	}
}
