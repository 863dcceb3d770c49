package store

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// ParsePath parses the form PathString writes: "/a/b[k=v][k2=v2]/c", with
// "\]" and "\\" escapes inside key values. "" and "/" are the root.
func ParsePath(s string) (*gnmi.Path, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%q: not valid UTF-8", s)
	}
	p := &gnmi.Path{}
	s = strings.TrimPrefix(s, "/")
	for len(s) > 0 {
		e := &gnmi.PathElem{}
		i := strings.IndexAny(s, "/[")
		if i < 0 {
			i = len(s)
		}
		e.Name = s[:i]
		if e.Name == "" {
			return nil, fmt.Errorf("%q: empty element name", s)
		}
		s = s[i:]
		for len(s) > 0 && s[0] == '[' {
			eq := strings.IndexByte(s, '=')
			if eq < 0 {
				return nil, fmt.Errorf("%q: key without '='", s)
			}
			k := s[1:eq]
			if k == "" || strings.ContainsAny(k, "[]/\\") {
				return nil, fmt.Errorf("%q: bad key name %q", s, k)
			}
			var v strings.Builder
			j := eq + 1
			for ; j < len(s) && s[j] != ']'; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				v.WriteByte(s[j])
			}
			if j == len(s) {
				return nil, fmt.Errorf("%q: unterminated key", s)
			}
			if e.Key == nil {
				e.Key = map[string]string{}
			}
			e.Key[k] = v.String()
			s = s[j+1:]
		}
		p.Elem = append(p.Elem, e)
		if len(s) > 0 {
			if s[0] != '/' {
				return nil, fmt.Errorf("%q: expected '/'", s)
			}
			s = s[1:]
		}
	}
	return p, nil
}

// MustPath is ParsePath for tests and constants; it panics on error.
func MustPath(s string) *gnmi.Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}
