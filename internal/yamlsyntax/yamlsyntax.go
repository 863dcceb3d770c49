// Package yamlsyntax places a YAML syntax error of go.yaml.in/yaml/v3 in
// its file: the line (and, for a tab, the column) a user must edit, for the
// loaders whose errors read "file:line:col: ...". It imports no yaml
// package: it reads the error's text and the document's bytes only.
package yamlsyntax

import (
	"regexp"
	"strconv"
	"strings"
)

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
