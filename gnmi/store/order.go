package store

import (
	"cmp"
	"slices"
	"strings"
)

// ComparePaths orders two data paths ("/a/b[k=v]/c", as PathString and
// Node.Key write them) as text, but for key values of digits alone, which
// compare by their value: queue[id=2] comes before queue[id=10], as the
// lists' entries do. It is the target's one path order: Get's updates,
// Subscribe's initial data, the entries of a list in a JSON value, Set's
// faults (gnmi/schema.ComparePaths).
func ComparePaths(a, b string) int { return compareTokens(pathTokens(a), pathTokens(b)) }

// SortByPath sorts s stably in the order of ComparePaths on key(e). Each
// path is split into its tokens once, not at every comparison (which
// allocates): a thousand leaves sort in well under a millisecond.
func SortByPath[E any](s []E, key func(E) string) {
	type keyed struct {
		tokens []pathToken
		e      E
	}
	ks := make([]keyed, len(s))
	for i, e := range s {
		ks[i] = keyed{tokens: pathTokens(key(e)), e: e}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return compareTokens(a.tokens, b.tokens) })
	for i := range ks {
		s[i] = ks[i].e
	}
}

func compareTokens(pa, pb []pathToken) int {
	for i := range min(len(pa), len(pb)) {
		x, y := pa[i], pb[i]
		if x.key && y.key && isDigits(x.text) && isDigits(y.text) {
			// Without leading zeros (a key is canonical) the longer is
			// the larger; no parse, so no overflow.
			if c := cmp.Compare(len(x.text), len(y.text)); c != 0 {
				return c
			}
		}
		if c := strings.Compare(x.text, y.text); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

// pathToken is a run of a path's text: a key's value (key) or what lies
// between key values.
type pathToken struct {
	text string
	key  bool
}

// pathTokens splits a path into its key values (after "=" inside
// brackets, to "," or "]" not escaped by "\") and the text between them.
func pathTokens(p string) []pathToken {
	var out []pathToken
	start, inBrackets, inValue := 0, false, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case inValue && c == '\\':
			i++ // an escaped character of the value
		case inValue && (c == ',' || c == ']'):
			out = append(out, pathToken{text: p[start:i], key: true})
			start, inValue, inBrackets = i, false, c == ','
		case !inValue && c == '[':
			inBrackets = true
		case inBrackets && !inValue && c == '=':
			out = append(out, pathToken{text: p[start : i+1]})
			start, inValue = i+1, true
		}
	}
	return append(out, pathToken{text: p[start:], key: inValue})
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
