package scenario

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one mistake in a scenario file. Its text is
// "file:line:col: field.path: reason", the form editors and CI logs link.
type Error struct {
	File   string
	Line   int // 1-based; 0 when the mistake is not tied to a place
	Col    int // 1-based
	Field  string
	Reason string
	Err    error // the underlying error, if any (unit parsing, file reading)
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorList is every mistake found in one file, in file order. Load
// returns it (as an error) when there is at least one.
type ErrorList []*Error

// maxShown bounds the text of a long list; the list itself keeps all.
const maxShown = 10

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i == maxShown {
			fmt.Fprintf(&b, "\n(and %d more)", len(l)-maxShown)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find the individual *Error values.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Errors returns the individual mistakes held in err (an ErrorList or a
// single *Error), or nil.
func Errors(err error) []*Error {
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}
