// Package jsonpos finds where in a JSON document something is, by line
// and column, so that an error about a JSON file can name its line: a
// syntax error, a member named by a path of member names and list
// entries (the paths gnmi/schema's errors give), a member given twice.
//
// It knows no schema and must not depend on gnmi/ or server/: a path is
// only member names, module prefixes ignored ("lhcnp:lhcnp" is lhcnp),
// with list entries selected by their members' values ([name=wan0]) or
// their index ([2]).
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Pos is a place in a document: line and column (in bytes) from 1.
type Pos struct{ Line, Col int }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// at converts a byte offset of data.
func at(data []byte, off int) Pos {
	off = min(max(off, 0), len(data))
	before := data[:off]
	nl := bytes.LastIndexByte(before, '\n')
	return Pos{Line: bytes.Count(before, []byte{'\n'}) + 1, Col: off - nl}
}

// node is a JSON value with where it starts.
type node struct {
	off     int
	kind    byte // '{', '[' or 's' (a scalar)
	scalar  string
	members []member
	elems   []*node
}

type member struct {
	name string
	off  int
	val  *node
}

// parser reads tokens and keeps their offsets.
type parser struct {
	data []byte
	dec  *json.Decoder
}

// start is the offset of the next token: the decoder's offset is after
// the previous token, before the separators.
func (p *parser) start() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

func (p *parser) value() (*node, error) {
	off := p.start()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	n := &node{off: off, kind: 's'}
	switch t := tok.(type) {
	case json.Delim:
		n.kind = byte(t)
		for p.dec.More() {
			if n.kind == '[' {
				el, err := p.value()
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, el)
				continue
			}
			koff := p.start()
			k, err := p.dec.Token()
			if err != nil {
				return nil, err
			}
			name, _ := k.(string)
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, member{name: name, off: koff, val: v})
		}
		if _, err := p.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.scalar = t
	default:
		n.scalar = fmt.Sprint(t)
	}
	return n, nil
}

// parse reads data, one JSON value; a syntax error is placed.
func parse(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &parser{data: data, dec: dec}
	n, err := p.value()
	if err == nil {
		off := p.start()
		if _, err = dec.Token(); err == io.EOF {
			return n, nil
		} else if err == nil {
			return nil, &Error{Pos: at(data, off), Reason: "data after the value"}
		}
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, &Error{Pos: at(data, int(se.Offset)), Reason: strings.TrimPrefix(se.Error(), "json: ")}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, &Error{Pos: at(data, len(data)), Reason: "empty document"}
		}
		return nil, &Error{Pos: at(data, len(data)), Reason: "unexpected end of the document"}
	}
	return nil, &Error{Pos: at(data, int(dec.InputOffset())), Reason: strings.TrimPrefix(err.Error(), "json: ")}
}

// Error is a mistake of the document at a place.
type Error struct {
	Pos    Pos
	Path   string // the member's path, "" for a syntax error
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Pos.String() + ": " + e.Reason
	}
	return e.Pos.String() + ": " + e.Path + ": " + e.Reason
}

// Check returns the first syntax error of data, or the first member given
// twice in one object (encoding/json keeps the last silently, so the
// other is lost), as an *Error; nil when neither.
func Check(data []byte) error {
	n, err := parse(data)
	if err != nil {
		return err
	}
	return duplicate(data, n, "")
}

func duplicate(data []byte, n *node, path string) error {
	seen := map[string]bool{}
	for _, m := range n.members {
		name := stripModule(m.name)
		p := name
		if path != "" {
			p = path + "/" + name
		}
		if seen[name] {
			return &Error{Pos: at(data, m.off), Path: p, Reason: "member given twice"}
		}
		seen[name] = true
		if err := duplicate(data, m.val, p); err != nil {
			return err
		}
	}
	for i, el := range n.elems {
		if err := duplicate(data, el, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// Member returns where the member at path is (its name; a list entry or
// leaf-list item selected last: the entry), false when data does not
// parse or has no such member.
func Member(data []byte, path string) (Pos, bool) {
	n, err := parse(data)
	if err != nil {
		return Pos{}, false
	}
	off := n.off
	for _, el := range splitPath(path) {
		name, pred, hasPred := strings.Cut(el, "[")
		found := false
		if n.kind == '{' {
			for _, m := range n.members {
				if stripModule(m.name) == name { // the last one, as encoding/json
					n, off, found = m.val, m.off, true
				}
			}
		}
		if !found {
			return Pos{}, false
		}
		if hasPred {
			if n = entry(n, strings.TrimSuffix(pred, "]")); n == nil {
				return Pos{}, false
			}
			off = n.off
		}
	}
	return at(data, off), true
}

// entry selects an element of the array n: by index ("2") or by the
// values of its members ("name=wan0,id=1").
func entry(n *node, pred string) *node {
	if n.kind != '[' {
		return nil
	}
	if !strings.Contains(pred, "=") {
		var i int
		if _, err := fmt.Sscan(pred, &i); err != nil || i < 0 || i >= len(n.elems) || fmt.Sprint(i) != pred {
			return nil
		}
		return n.elems[i]
	}
next:
	for _, el := range n.elems {
		for _, kv := range strings.Split(pred, ",") {
			k, v, _ := strings.Cut(kv, "=")
			ok := false
			for _, m := range el.members {
				if stripModule(m.name) == k && m.val.kind == 's' && m.val.scalar == v {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		return el
	}
	return nil
}

// splitPath splits a path at the slashes outside brackets (a key's value
// may hold one: receiver[prefix=10.0.0.0/8]).
func splitPath(path string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '[':
			depth++
		case ']':
			depth = max(depth-1, 0)
		case '/':
			if depth == 0 {
				if i > start {
					out = append(out, path[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(path) {
		out = append(out, path[start:])
	}
	return out
}

func stripModule(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		return name[i+1:]
	}
	return name
}
