package spec

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// An Error is one mistake in a spec, at a position of its file. Line and
// Col are 1-based; Col is 0 when only the line is known (YAML syntax
// errors), Line is 0 when the mistake concerns the whole file.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Col == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// An ErrorList is every mistake found in one spec, sorted by position.
// Parse collects them so that a user fixes a file in one round rather than
// one message at a time.
type ErrorList []*Error

// maxErrors bounds the list: past this many, later messages are mostly
// consequences of the first ones.
const maxErrors = 20

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap exposes the individual errors to errors.As and errors.Is.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// sorted returns the list ordered by position with exact duplicates
// removed, truncated to maxErrors (with a final line saying so).
func (l ErrorList) sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Col < l[j].Col
	})
	out := l[:0:0]
	for i, e := range l {
		if i > 0 && *e == *l[i-1] {
			continue
		}
		out = append(out, e)
	}
	if len(out) > maxErrors {
		n := len(out) - maxErrors
		last := out[maxErrors-1]
		out = append(out[:maxErrors:maxErrors], &Error{File: last.File, Line: last.Line, Col: last.Col,
			Msg: fmt.Sprintf("%d more errors not shown", n)})
	}
	return out
}

// intRangeMsg says that an integer of the spec does not fit the 32 bits
// every count and length is held in (and launched with), and what does.
func intRangeMsg(key, value string) string {
	return fmt.Sprintf("%s: %s is out of range: want an integer from %d to %d", key, value, math.MinInt32, math.MaxInt32)
}
