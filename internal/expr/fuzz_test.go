package expr

import (
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse or Eval panic, that every
// error carries a column inside the text (or just past it), and that the
// symbols an expression reports all occur in its text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SPLITS", "cdiv(heads, 4) * batch", "-(1+2)%3", "min(max(1,2),3)",
		"1/0", "((((", "a b", "9223372036854775807*2", "-9223372036854775807-1/ -1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			pe, ok := err.(*Error)
			if !ok {
				t.Fatalf("Parse(%q) returned %T, want *Error", src, err)
			}
			if pe.Col < 1 || pe.Col > len(src)+1 {
				t.Fatalf("Parse(%q): column %d outside 1..%d", src, pe.Col, len(src)+1)
			}
			return
		}
		for _, s := range e.Symbols() {
			if !strings.Contains(src, s) {
				t.Fatalf("Parse(%q): symbol %q not in the text", src, s)
			}
		}
		full := Env{}
		for _, s := range e.Symbols() {
			full[s] = int64(len(s)) - 3 // zero, negative and positive values
		}
		if _, err := e.Eval(full); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Eval(%q) returned %T, want *Error", src, err)
			}
		}
	})
}
