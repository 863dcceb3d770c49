// Package yangstyle checks YANG modules against the OpenConfig-style rules
// the lhcnp modules follow, so that a change to yang/ that breaks one fails
// a test naming the node at fault.
//
// The rules, and the Rule value that reports each:
//
//   - RuleDescription: every module, grouping, typedef, container, list,
//     leaf, leaf-list, choice, case, identity, enum, augment, rpc,
//     notification, feature and extension has a description.
//   - RuleName: identifiers are lower-case-hyphen (a-z, 0-9, single hyphens).
//   - RuleEnumName: enumeration values are UPPER_CASE (A-Z, 0-9, single
//     underscores).
//   - RuleGroupingName: grouping names end in -config, -state or -top.
//   - RuleContainerContent: a config container only uses *-config
//     groupings, a state container only *-config and *-state groupings; no
//     leaf is written into them directly.
//   - RuleLeafPlacement: every leaf and leaf-list has a config or state
//     container among its ancestors; only list keys sit directly in a list.
//   - RuleConfigState: config containers are read-write, state containers
//     read-only, and every config container has a state sibling.
//   - RuleStateRepeatsConfig: a state container repeats every leaf of its
//     config sibling, with the same type.
//   - RuleListKey: each list key is a leafref to ../config/<key>
//     (../state/<key> for read-only lists) and that leaf exists.
//   - RuleListContainer: a list is the only child of its enclosing container
//     (interfaces/interface).
//   - RuleUnits: every numeric leaf (integers, decimal64) has units, on the
//     leaf or on its typedef.
//   - RuleCounters: leaves of a counter64 type sit in a counters container
//     directly under state, and a counters container holds only counters.
//   - RuleTimestamp: leaves named timestamp or ending in -time or -seen are
//     of a timeticks64 type with units "nanoseconds" (nanoseconds since the
//     Unix epoch), and every timeticks64 leaf has those units.
//
// The package depends only on goyang; it does not know the lhcnp modules.
package yangstyle

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/openconfig/goyang/pkg/yang"
)

// Rule names one style rule.
type Rule string

// The rules; the package comment describes each.
const (
	RuleDescription        Rule = "description"
	RuleName               Rule = "name"
	RuleEnumName           Rule = "enum-name"
	RuleGroupingName       Rule = "grouping-name"
	RuleContainerContent   Rule = "container-content"
	RuleLeafPlacement      Rule = "leaf-placement"
	RuleConfigState        Rule = "config-state"
	RuleStateRepeatsConfig Rule = "state-repeats-config"
	RuleListKey            Rule = "list-key"
	RuleListContainer      Rule = "list-container"
	RuleUnits              Rule = "units"
	RuleCounters           Rule = "counters"
	RuleTimestamp          Rule = "timestamp"
)

// Problem is one breach of a rule.
type Problem struct {
	Rule Rule
	// Node names the offending node: a data path such as
	// /lhcnp/global/config/enabled, or, for statements outside the data
	// tree, the chain of statements such as
	// "module lhcnp / grouping lhcnp-global-config / leaf enabled".
	Node string
	// Pos is file:line:col when known.
	Pos string
	Msg string
}

func (p Problem) String() string {
	if p.Pos != "" {
		return fmt.Sprintf("%s: %s: %s (%s)", p.Pos, p.Node, p.Msg, p.Rule)
	}
	return fmt.Sprintf("%s: %s (%s)", p.Node, p.Msg, p.Rule)
}

// Check parses the given module files, with dirs as the search path for
// imports, and returns every breach of the rules in those files (imported
// modules found on the search path are not checked unless listed). The
// error reports files that do not parse or resolve.
func Check(files []string, dirs ...string) ([]Problem, error) {
	ms := yang.NewModules()
	for _, d := range dirs {
		ms.AddPath(d)
	}
	var probs []Problem
	var names []string
	for _, f := range files {
		ms.AddPath(filepath.Dir(f))
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		stmts, err := yang.Parse(string(src), f)
		if err != nil {
			return nil, err
		}
		for _, s := range stmts {
			if s.Keyword != "module" && s.Keyword != "submodule" {
				continue
			}
			probs = append(probs, checkStatements(s, nil)...)
			if s.Keyword == "module" {
				names = append(names, s.Argument)
			}
		}
		if err := ms.Read(f); err != nil {
			return nil, err
		}
	}
	if errs := ms.Process(); len(errs) > 0 {
		return nil, fmt.Errorf("yangstyle: %v", errs)
	}
	for _, name := range names {
		mod, errs := ms.GetModule(name)
		if len(errs) > 0 {
			return nil, fmt.Errorf("yangstyle: module %s: %v", name, errs)
		}
		for _, c := range sortedChildren(mod) {
			probs = append(probs, checkEntry(c)...)
		}
	}
	sort.SliceStable(probs, func(i, j int) bool {
		if probs[i].Node != probs[j].Node {
			return probs[i].Node < probs[j].Node
		}
		return probs[i].Rule < probs[j].Rule
	})
	return probs, nil
}

var (
	lowerHyphen = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	upperSnake  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)
	timestampRe = regexp.MustCompile(`(^timestamp$|-time$|-seen$)`)
)

// needsDescription lists the statements that must carry a description.
var needsDescription = map[string]bool{
	"module": true, "submodule": true, "grouping": true, "typedef": true,
	"container": true, "list": true, "leaf": true, "leaf-list": true,
	"choice": true, "case": true, "identity": true, "enum": true,
	"augment": true, "rpc": true, "notification": true, "feature": true,
	"extension": true, "anydata": true, "anyxml": true,
}

// namedStatements lists the statements whose argument is an identifier the
// naming rule applies to.
var namedStatements = map[string]bool{
	"module": true, "submodule": true, "grouping": true, "typedef": true,
	"container": true, "list": true, "leaf": true, "leaf-list": true,
	"choice": true, "case": true, "identity": true, "rpc": true,
	"notification": true, "feature": true, "extension": true,
	"anydata": true, "anyxml": true,
}

// checkStatements applies the rules that need the source text: descriptions,
// names and the content of config and state containers.
func checkStatements(s *yang.Statement, chain []string) []Problem {
	var probs []Problem
	chain = append(chain, s.Keyword+" "+s.Argument)
	node := strings.Join(chain, " / ")
	report := func(r Rule, format string, args ...any) {
		probs = append(probs, Problem{Rule: r, Node: node, Pos: s.Location(), Msg: fmt.Sprintf(format, args...)})
	}
	subs := s.SubStatements()
	if needsDescription[s.Keyword] && !hasSub(subs, "description") {
		report(RuleDescription, "no description")
	}
	if namedStatements[s.Keyword] && !lowerHyphen.MatchString(s.Argument) {
		report(RuleName, "name %q is not lower-case-hyphen", s.Argument)
	}
	if s.Keyword == "enum" && !upperSnake.MatchString(s.Argument) {
		report(RuleEnumName, "enumeration value %q is not UPPER_CASE", s.Argument)
	}
	if s.Keyword == "grouping" && !hasAnySuffix(s.Argument, "-config", "-state", "-top") {
		report(RuleGroupingName, "grouping %q does not end in -config, -state or -top", s.Argument)
	}
	if s.Keyword == "container" && (s.Argument == "config" || s.Argument == "state") {
		allowed := []string{"-config"}
		if s.Argument == "state" {
			allowed = append(allowed, "-state")
		}
		for _, c := range subs {
			switch c.Keyword {
			case "description", "config", "reference", "status", "when", "if-feature", "must":
			case "uses":
				g := c.Argument
				if i := strings.IndexByte(g, ':'); i >= 0 {
					g = g[i+1:]
				}
				if !hasAnySuffix(g, allowed...) {
					report(RuleContainerContent, "%s container uses grouping %q; only %s groupings belong here",
						s.Argument, c.Argument, strings.Join(allowed, " and "))
				}
			default:
				report(RuleContainerContent, "%s container holds %s %q directly; define it in a %s grouping",
					s.Argument, c.Keyword, c.Argument, allowed[len(allowed)-1])
			}
		}
	}
	for _, c := range subs {
		probs = append(probs, checkStatements(c, chain)...)
	}
	return probs
}

func hasSub(subs []*yang.Statement, keyword string) bool {
	for _, c := range subs {
		if c.Keyword == keyword {
			return true
		}
	}
	return false
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// dataPath is the schema path of e without the module name: /lhcnp/global.
func dataPath(e *yang.Entry) string {
	var elems []string
	for ; e != nil && e.Parent != nil; e = e.Parent {
		elems = append(elems, e.Name)
	}
	var b strings.Builder
	for i := len(elems) - 1; i >= 0; i-- {
		b.WriteString("/")
		b.WriteString(elems[i])
	}
	return b.String()
}

func sortedChildren(e *yang.Entry) []*yang.Entry {
	names := make([]string, 0, len(e.Dir))
	for n := range e.Dir {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*yang.Entry, len(names))
	for i, n := range names {
		out[i] = e.Dir[n]
	}
	return out
}

func isLeaf(e *yang.Entry) bool { return e.IsLeaf() || e.IsLeafList() }

func isNumeric(k yang.TypeKind) bool {
	switch k {
	case yang.Yint8, yang.Yint16, yang.Yint32, yang.Yint64,
		yang.Yuint8, yang.Yuint16, yang.Yuint32, yang.Yuint64, yang.Ydecimal64:
		return true
	}
	return false
}

func typeName(e *yang.Entry) string {
	if e.Type == nil {
		return ""
	}
	return e.Type.Name
}

// units returns the units of leaf e: its own units statement, else its
// typedef's. goyang (v1.6.3) does not copy a leaf's units into Entry.Units,
// so the statement is read from the node.
func units(e *yang.Entry) string {
	if e.Units != "" {
		return e.Units
	}
	switch n := e.Node.(type) {
	case *yang.Leaf:
		if n.Units != nil {
			return n.Units.Name
		}
	case *yang.LeafList:
		if n.Units != nil {
			return n.Units.Name
		}
	}
	if e.Type != nil {
		return e.Type.Units
	}
	return ""
}

// isListKey reports whether leaf e is a key of its parent list.
func isListKey(e *yang.Entry) bool {
	p := e.Parent
	if p == nil || !p.IsList() {
		return false
	}
	for _, k := range strings.Fields(p.Key) {
		if k == e.Name {
			return true
		}
	}
	return false
}

// underConfigOrState reports whether e has a config or state container
// among its ancestors.
func underConfigOrState(e *yang.Entry) bool {
	for p := e.Parent; p != nil; p = p.Parent {
		if p.IsContainer() && (p.Name == "config" || p.Name == "state") {
			return true
		}
	}
	return false
}

// checkEntry applies the rules that need the resolved schema tree.
func checkEntry(e *yang.Entry) []Problem {
	var probs []Problem
	node := dataPath(e)
	report := func(r Rule, format string, args ...any) {
		probs = append(probs, Problem{Rule: r, Node: node, Pos: entryPos(e), Msg: fmt.Sprintf(format, args...)})
	}

	switch {
	case isLeaf(e):
		if !underConfigOrState(e) && !isListKey(e) {
			report(RuleLeafPlacement, "leaf is not under a config or state container")
		}
		if e.Type != nil && isNumeric(e.Type.Kind) && units(e) == "" {
			report(RuleUnits, "numeric leaf (%s) has no units", e.Type.Kind)
		}
		tn := typeName(e)
		inCounters := e.Parent != nil && e.Parent.Name == "counters"
		if tn == "counter64" && !(inCounters && e.Parent.Parent != nil && e.Parent.Parent.Name == "state") {
			report(RuleCounters, "counter leaf is not in a state/counters container")
		}
		if inCounters && tn != "counter64" {
			report(RuleCounters, "leaf in a counters container has type %q, not a counter64", tn)
		}
		if timestampRe.MatchString(e.Name) && tn != "timeticks64" {
			report(RuleTimestamp, "timestamp leaf has type %q, not a timeticks64 (nanoseconds since the Unix epoch)", tn)
		}
		if tn == "timeticks64" && units(e) != "nanoseconds" {
			report(RuleTimestamp, "timeticks64 leaf has units %q, want \"nanoseconds\"", units(e))
		}

	case e.IsContainer() && e.Name == "config":
		if e.ReadOnly() {
			report(RuleConfigState, "config container is read-only")
		}
		state := siblingState(e)
		if state == nil {
			report(RuleConfigState, "config container has no state sibling")
		} else {
			probs = append(probs, checkRepeats(e, state)...)
		}

	case e.IsContainer() && e.Name == "state":
		if !e.ReadOnly() {
			report(RuleConfigState, "state container is not config false")
		}

	case e.IsList():
		probs = append(probs, checkList(e)...)
	}

	if e.IsContainer() && e.Name == "counters" && (e.Parent == nil || e.Parent.Name != "state") {
		report(RuleCounters, "counters container is not directly under state")
	}

	for _, c := range sortedChildren(e) {
		probs = append(probs, checkEntry(c)...)
	}
	return probs
}

func siblingState(config *yang.Entry) *yang.Entry {
	if config.Parent == nil {
		return nil
	}
	s := config.Parent.Dir["state"]
	if s == nil || !s.IsContainer() {
		return nil
	}
	return s
}

// checkRepeats checks that state repeats every leaf of config with the same
// type.
func checkRepeats(config, state *yang.Entry) []Problem {
	var probs []Problem
	for _, c := range sortedChildren(config) {
		if !isLeaf(c) {
			continue
		}
		s := state.Dir[c.Name]
		switch {
		case s == nil || !isLeaf(s):
			probs = append(probs, Problem{Rule: RuleStateRepeatsConfig, Node: dataPath(state) + "/" + c.Name, Pos: entryPos(state),
				Msg: fmt.Sprintf("state does not repeat config leaf %s", dataPath(c))})
		case typeName(s) != typeName(c) || (s.Type != nil && c.Type != nil && s.Type.Kind != c.Type.Kind):
			probs = append(probs, Problem{Rule: RuleStateRepeatsConfig, Node: dataPath(s), Pos: entryPos(s),
				Msg: fmt.Sprintf("state leaf has type %q, config leaf %q", typeName(s), typeName(c))})
		}
	}
	return probs
}

func checkList(l *yang.Entry) []Problem {
	var probs []Problem
	node := dataPath(l)
	report := func(r Rule, n, format string, args ...any) {
		probs = append(probs, Problem{Rule: r, Node: n, Pos: entryPos(l), Msg: fmt.Sprintf(format, args...)})
	}
	if p := l.Parent; p == nil || !p.IsContainer() || len(p.Dir) != 1 {
		report(RuleListContainer, node, "list is not the only child of an enclosing container")
	}
	keys := strings.Fields(l.Key)
	if len(keys) == 0 {
		report(RuleListKey, node, "list has no key")
	}
	holder := "config"
	if l.ReadOnly() {
		holder = "state"
	}
	for _, k := range keys {
		kp := node + "/" + k
		ke := l.Dir[k]
		if ke == nil {
			report(RuleListKey, kp, "key leaf is missing")
			continue
		}
		want := "../" + holder + "/" + k
		if ke.Type == nil || ke.Type.Kind != yang.Yleafref {
			report(RuleListKey, kp, "key is not a leafref to %s", want)
			continue
		}
		if ke.Type.Path != want {
			report(RuleListKey, kp, "key is a leafref to %s, want %s", ke.Type.Path, want)
			continue
		}
		if h := l.Dir[holder]; h == nil || h.Dir[k] == nil || !isLeaf(h.Dir[k]) {
			report(RuleListKey, kp, "key target %s does not exist", want)
		}
	}
	return probs
}

func entryPos(e *yang.Entry) string {
	if e.Node == nil {
		return ""
	}
	if s := e.Node.Statement(); s != nil {
		return s.Location()
	}
	return ""
}
