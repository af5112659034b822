package expr

import "fmt"

type tokenKind int

const (
	tEOF tokenKind = iota
	tError
	tNum
	tIdent
	tOp
	tLParen
	tRParen
	tComma
)

type token struct {
	kind tokenKind
	text string
	col  int // 1-based
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tNum:
		return "number " + t.text
	case tIdent:
		return "symbol " + t.text
	}
	return fmt.Sprintf("%q", t.text)
}

// lexer splits an expression into tokens. It works on bytes: anything
// outside ASCII is an error anyway, reported at its byte column.
type lexer struct {
	src string
	pos int
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func (l *lexer) next() token {
	for l.pos < len(l.src) && (l.src[l.pos] == ' ' || l.src[l.pos] == '\t') {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return token{tEOF, "", start + 1}
	}
	c := l.src[l.pos]
	switch {
	case isDigit(c):
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
		if l.pos < len(l.src) && isLetter(l.src[l.pos]) {
			return token{tError, fmt.Sprintf("malformed number %q", l.src[start:l.pos+1]), start + 1}
		}
		return token{tNum, l.src[start:l.pos], start + 1}
	case isLetter(c):
		for l.pos < len(l.src) && (isLetter(l.src[l.pos]) || isDigit(l.src[l.pos])) {
			l.pos++
		}
		return token{tIdent, l.src[start:l.pos], start + 1}
	}
	l.pos++
	switch c {
	case '+', '-', '*', '/', '%':
		return token{tOp, string(c), start + 1}
	case '(':
		return token{tLParen, "(", start + 1}
	case ')':
		return token{tRParen, ")", start + 1}
	case ',':
		return token{tComma, ",", start + 1}
	}
	return token{tError, fmt.Sprintf("unexpected character %q", c), start + 1}
}
