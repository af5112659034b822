// Package expr parses and evaluates the small integer expressions of
// ktune's launch geometry (grid, block, shared memory): integer literals,
// identifiers, + - * / % with C precedence, unary minus, parentheses and the
// functions min, max and cdiv(a, b) = ceil(a/b), and the host-computed
// values of hostfuncs.go (log2, fast division). Identifiers are the shape
// symbols (heads, kv_heads, head_dim, batch, group, capacity, nkv) and the
// point's defines; an Env supplies their values.
//
// Errors carry the 1-based column of the offending character so that the
// spec can report them as file:line:col.
package expr

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// maxDepth bounds nesting so that a hostile expression cannot exhaust the
// stack of the recursive-descent parser.
const maxDepth = 64

// An Error is a syntax or evaluation error at a column of the expression.
type Error struct {
	Col int    // 1-based column in the expression text
	Msg string // what is wrong
}

func (e *Error) Error() string { return fmt.Sprintf("col %d: %s", e.Col, e.Msg) }

// An Env maps symbol names to their integer values.
type Env map[string]int64

// An Expr is a parsed expression.
type Expr struct {
	src  string
	root node
}

// Parse parses src. It never panics; a malformed expression is an *Error.
func Parse(src string) (*Expr, error) {
	p := &parser{lex: lexer{src: src}}
	p.next()
	n, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errorf("unexpected %s", p.tok)
	}
	return &Expr{src: src, root: n}, nil
}

// String returns the expression text as written.
func (e *Expr) String() string { return e.src }

// Symbols returns the identifiers the expression reads, sorted and
// deduplicated (function names excluded).
func (e *Expr) Symbols() []string {
	set := map[string]bool{}
	e.root.symbols(set)
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Eval evaluates the expression. An unknown symbol, a division by zero or
// a result outside 64 bits (never wrapped around) is an *Error at the
// column where it occurs.
func (e *Expr) Eval(env Env) (int64, error) { return e.root.eval(env) }

type node interface {
	eval(Env) (int64, error)
	symbols(map[string]bool)
}

type numNode struct{ v int64 }

type identNode struct {
	name string
	col  int
}

type unaryNode struct{ x node }

type binNode struct {
	op   byte
	x, y node
	col  int // column of the operator, for division by zero
}

type callNode struct {
	fn   string
	args []node
	col  int
}

func (n numNode) eval(Env) (int64, error) { return n.v, nil }
func (n numNode) symbols(map[string]bool) {}

func (n identNode) eval(env Env) (int64, error) {
	v, ok := env[n.name]
	if !ok {
		return 0, &Error{n.col, fmt.Sprintf("unknown symbol %q", n.name)}
	}
	return v, nil
}
func (n identNode) symbols(s map[string]bool) { s[n.name] = true }

func (n unaryNode) eval(env Env) (int64, error) {
	v, err := n.x.eval(env)
	if err == nil && v == math.MinInt64 {
		return 0, &Error{1, "overflows a 64-bit integer"}
	}
	return -v, err
}
func (n unaryNode) symbols(s map[string]bool) { n.x.symbols(s) }

func (n binNode) eval(env Env) (int64, error) {
	a, err := n.x.eval(env)
	if err != nil {
		return 0, err
	}
	b, err := n.y.eval(env)
	if err != nil {
		return 0, err
	}
	overflow := &Error{n.col, fmt.Sprintf("%d %c %d overflows a 64-bit integer", a, n.op, b)}
	switch n.op {
	case '+':
		if s := a + b; (s > a) == (b > 0) {
			return s, nil
		}
		return 0, overflow
	case '-':
		if s := a - b; (s < a) == (b > 0) {
			return s, nil
		}
		return 0, overflow
	case '*':
		if a == 0 || b == 0 {
			return 0, nil
		}
		if p := a * b; p/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64) {
			return p, nil
		}
		return 0, overflow
	case '/', '%':
		if b == 0 {
			return 0, &Error{n.col, "division by zero"}
		}
		if a == math.MinInt64 && b == -1 {
			return 0, overflow
		}
		if n.op == '/' {
			return a / b, nil
		}
		return a % b, nil
	}
	return 0, &Error{n.col, fmt.Sprintf("unknown operator %q", n.op)}
}
func (n binNode) symbols(s map[string]bool) { n.x.symbols(s); n.y.symbols(s) }

func (n callNode) eval(env Env) (int64, error) {
	args := make([]int64, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(env)
		if err != nil {
			return 0, err
		}
		args[i] = v
	}
	if h, ok := hostFuncs[n.fn]; ok {
		v, err := h.f(args)
		if err != nil {
			return 0, &Error{n.col, fmt.Sprintf("%s: %v", n.fn, err)}
		}
		return v, nil
	}
	a, b := args[0], args[1]
	switch n.fn {
	case "min":
		return min(a, b), nil
	case "max":
		return max(a, b), nil
	case "cdiv":
		if b == 0 {
			return 0, &Error{n.col, "cdiv: division by zero"}
		}
		if a == math.MinInt64 && b == -1 {
			return 0, &Error{n.col, "cdiv: overflows a 64-bit integer"}
		}
		// Rounds toward +inf for either sign, so cdiv(-7, 2) = -3.
		q := a / b
		if a%b != 0 && (a < 0) == (b < 0) {
			q++
		}
		return q, nil
	}
	return 0, &Error{n.col, fmt.Sprintf("unknown function %q", n.fn)}
}
func (n callNode) symbols(s map[string]bool) {
	for _, a := range n.args {
		a.symbols(s)
	}
}

// functions lists the callable names and their arity.
var functions = map[string]int{"min": 2, "max": 2, "cdiv": 2}

type parser struct {
	lex   lexer
	tok   token
	depth int
}

func (p *parser) next() { p.tok = p.lex.next() }

func (p *parser) errorf(format string, args ...any) error {
	if p.tok.kind == tError {
		return &Error{p.tok.col, p.tok.text}
	}
	return &Error{p.tok.col, fmt.Sprintf(format, args...)}
}

// precedence of binary operators; 0 means "not a binary operator".
func precedence(t token) int {
	if t.kind != tOp {
		return 0
	}
	switch t.text {
	case "+", "-":
		return 1
	case "*", "/", "%":
		return 2
	}
	return 0
}

// expr parses a binary expression whose operators bind tighter than minPrec
// (precedence climbing; all operators are left-associative).
func (p *parser) expr(minPrec int) (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errorf("expression nested deeper than %d", maxDepth)
	}
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		prec := precedence(p.tok)
		if prec == 0 || prec <= minPrec {
			return x, nil
		}
		op := p.tok
		p.next()
		y, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		x = binNode{op: op.text[0], x: x, y: y, col: op.col}
	}
}

func (p *parser) unary() (node, error) {
	if p.tok.kind == tOp && p.tok.text == "-" {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, p.errorf("expression nested deeper than %d", maxDepth)
		}
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return unaryNode{x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t := p.tok
	switch t.kind {
	case tNum:
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return nil, &Error{t.col, fmt.Sprintf("integer %s out of range", t.text)}
		}
		p.next()
		return numNode{v}, nil
	case tIdent:
		p.next()
		if p.tok.kind != tLParen {
			return identNode{t.text, t.col}, nil
		}
		arity, ok := functions[t.text]
		if !ok {
			return nil, &Error{t.col, fmt.Sprintf("unknown function %q (want min, max, cdiv, log2, ceil_log2, fastdiv_m, fastdiv_s, fastdiv_a, fmd_mul, fmd_add, fmd_shift or wave_fill)", t.text)}
		}
		p.next()
		var args []node
		for {
			a, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
		if p.tok.kind != tRParen {
			return nil, p.errorf("expected ',' or ')' in call of %s, found %s", t.text, p.tok)
		}
		p.next()
		if len(args) != arity {
			return nil, &Error{t.col, fmt.Sprintf("%s takes %d arguments, got %d", t.text, arity, len(args))}
		}
		return callNode{fn: t.text, args: args, col: t.col}, nil
	case tLParen:
		p.next()
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			return nil, p.errorf("expected ')', found %s", p.tok)
		}
		p.next()
		return x, nil
	}
	return nil, p.errorf("expected a number, a symbol or '(', found %s", t)
}
