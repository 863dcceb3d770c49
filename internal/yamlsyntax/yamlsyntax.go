// Package yamlsyntax places a YAML syntax error of go.yaml.in/yaml/v3 in
// its file: the line (and, for a tab, the column) a user must edit, for the
// loaders whose errors read "file:line:col: ...", and names a node's kind
// in their messages (KindName). Locate reads the error's text and the
// document's bytes only.
package yamlsyntax

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// KindName is what a loader's message calls n where it wanted something
// else: "a mapping", "a list", "empty" for a null, a scalar by its
// quoted value ("fast").
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "unexpected yaml"
}

// lineRE matches yaml.v3's "yaml: line N: reason" (the "yaml: " prefix is
// absent in the messages of a yaml.TypeError's list).
var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Locate returns where msg, a yaml.v3 error's text about data, happened:
// its line and column (0 when unknown) and its reason without the
// "yaml: line N: " prefix.
//
// yaml.v3 gives the line of the block the scanner was in when it met a
// tab, often the line above the tab (or none on the first line), and no
// column: a tab in the indentation is looked for from that line on and
// reported where it is, with a reason that says what to change.
func Locate(data []byte, msg string) (line, col int, reason string) {
	reason = strings.TrimPrefix(msg, "yaml: ")
	if g := lineRE.FindStringSubmatch(msg); g != nil {
		line, _ = strconv.Atoi(g[1])
		reason = g[2]
	}
	switch {
	case line > 0 && parserProblem(reason):
		// yaml.v3 prints a parser error's 0-based line (it adds one to a
		// scanner error's only): "c: [1, 2" on line 3 is "line 2".
		line++
	case line == 0 && fromParser(reason):
		// It prints no line when the error is on the first (line 0).
		line = 1
	}
	if strings.Contains(reason, "tab character") || strings.Contains(reason, "cannot start any token") {
		if l, c := indentTab(data, max(line, 1)); l > 0 {
			return l, c, "a tab in the indentation (YAML indents with spaces only)"
		}
	}
	if line > 0 {
		col = 1
	}
	return line, col, reason
}

// parserProblems are the problems of yaml.v3's parser (parserc.go), whose
// line it prints 0-based; its scanner's are printed 1-based.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}

func parserProblem(reason string) bool {
	for _, p := range parserProblems {
		if reason == p {
			return true
		}
	}
	return false
}

// fromParser says whether reason is one of the parser's or the scanner's
// problems, which carry a place (not the composer's "unknown anchor", nor
// the reader's encoding errors, which carry none).
func fromParser(reason string) bool {
	for _, p := range []string{"found ", "did not find ", "could not find "} {
		if strings.HasPrefix(reason, p) {
			return true
		}
	}
	return strings.HasSuffix(reason, "not allowed in this context")
}

// indentTab returns the line and column of the first tab in the leading
// whitespace of a line at or after from, or 0, 0.
func indentTab(data []byte, from int) (line, col int) {
	for i, l := range strings.Split(string(data), "\n") {
		if i+1 < from {
			continue
		}
		for j := 0; j < len(l) && (l[j] == ' ' || l[j] == '\t'); j++ {
			if l[j] == '\t' {
				return i + 1, j + 1
			}
		}
	}
	return 0, 0
}
