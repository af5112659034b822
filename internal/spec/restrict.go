package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/internal/expr"
)

// A Restriction is one entry of the spec's restrict: list, a comparison of
// two integer expressions over the axes (nkv and the defines) and the
// shape symbols, e.g. "SPLITS*NR <= 256". The plan keeps a point only
// where every restriction that applies to it holds; one applies to a
// point whose variant has a value for every symbol it reads.
type Restriction struct {
	Text     string
	Pos      Pos // of the text's first character: a column in the text adds to it
	op       string
	lhs, rhs *expr.Expr
}

// restrictOps are the comparisons, longest first so that "<=" is not read
// as "<".
var restrictOps = []string{"<=", ">=", "==", "!=", "<", ">"}

// ParseRestriction parses "EXPR OP EXPR". A mistake is an *expr.Error whose
// column counts in text.
func ParseRestriction(text string) (*Restriction, error) {
	at, op := -1, ""
	for _, o := range restrictOps {
		if i := strings.Index(text, o); i >= 0 && (at < 0 || i < at) {
			at, op = i, o
		}
	}
	if at < 0 {
		return nil, &expr.Error{Col: 1, Msg: "want a comparison: EXPR <= EXPR (or <, >=, >, ==, !=)"}
	}
	lhs, err := expr.Parse(text[:at])
	if err != nil {
		return nil, shiftCol(err, 0)
	}
	rest := at + len(op)
	rhs, err := expr.Parse(text[rest:])
	if err != nil {
		return nil, shiftCol(err, rest)
	}
	return &Restriction{Text: text, op: op, lhs: lhs, rhs: rhs}, nil
}

// shiftCol moves an expression error's column by off characters.
func shiftCol(err error, off int) error {
	var ee *expr.Error
	if errors.As(err, &ee) {
		return &expr.Error{Col: ee.Col + off, Msg: ee.Msg}
	}
	return err
}

// Symbols returns the names the restriction reads.
func (r *Restriction) Symbols() []string {
	s := append(r.lhs.Symbols(), r.rhs.Symbols()...)
	slices.Sort(s)
	return slices.Compact(s)
}

// Allows reports whether the point env holds passes: applies is false when
// env lacks a symbol the restriction reads (it does not constrain that
// variant), and err is an evaluation error (a division by zero).
func (r *Restriction) Allows(env expr.Env) (ok, applies bool, err error) {
	for _, s := range r.Symbols() {
		if _, has := env[s]; !has {
			return true, false, nil
		}
	}
	a, err := r.lhs.Eval(env)
	if err != nil {
		return false, true, err
	}
	b, err := r.rhs.Eval(env)
	if err != nil {
		return false, true, shiftCol(err, strings.Index(r.Text, r.op)+len(r.op))
	}
	switch r.op {
	case "<=":
		ok = a <= b
	case "<":
		ok = a < b
	case ">=":
		ok = a >= b
	case ">":
		ok = a > b
	case "==":
		ok = a == b
	case "!=":
		ok = a != b
	}
	return ok, true, nil
}

// shapeSymbols are the names a restriction may read besides the axes and
// the variants' defines: the shape's, as the geometry reads them, and its
// query tokens per sequence (QLenSymbol).
var shapeSymbols = []string{"heads", "kv_heads", "head_dim", "batch", "group", "capacity", QLenSymbol}

// QLenSymbol is a shape's query tokens per sequence in a restriction (1
// without q_len), so that a tuning for several tokens can be kept off the
// one-token shapes of the same spec.
const QLenSymbol = "q_len"

// restrict decodes the restrict: list. Each symbol must name an axis, a
// define of some variant or a shape symbol (checked once every section
// decoded: restrictSymbols).
func (d *decoder) restrict(n *yaml.Node, s *Spec) {
	l, ok := d.list(n, "restrict", true)
	if !ok {
		return
	}
	for i, e := range l {
		where := fmt.Sprintf("restrict[%d]", i)
		text, ok := d.scalar(e, where)
		if !ok {
			continue
		}
		r, err := ParseRestriction(text)
		if err != nil {
			var ee *expr.Error
			if errors.As(err, &ee) {
				d.errs = append(d.errs, &Error{File: d.file, Line: e.Line, Col: e.Column + valueOffset(e) + ee.Col - 1,
					Msg: fmt.Sprintf("%s %q: %s", where, text, ee.Msg)})
				continue
			}
			d.errorf(e, "%s %q: %v", where, text, err)
			continue
		}
		r.Pos = Pos{e.Line, e.Column + valueOffset(e)} // the text's first character
		s.Restrictions = append(s.Restrictions, *r)
	}
}

// valueOffset is how far a scalar's text starts after its node's column:
// one for a quoted scalar, whose column is the quote's.
func valueOffset(n *yaml.Node) int {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return 1
	}
	return 0
}

// restrictSymbols checks that every symbol a restriction reads is one a
// point can have: nkv, an axis, a variant's define, a shape symbol.
func (d *decoder) restrictSymbols(s *Spec) {
	known := map[string]bool{NKV: true}
	for _, n := range shapeSymbols {
		known[n] = true
	}
	for _, ax := range s.Axes {
		known[ax.Name] = true
	}
	for _, v := range s.Variants {
		for n := range v.Defines {
			known[n] = true
		}
		if v.Builtin != nil {
			for _, ds := range v.Builtin.Defines {
				known[ds.Name] = true
			}
		}
		for _, a := range v.Dispatch {
			for n := range a.Defines {
				known[n] = true
			}
		}
	}
	for i, r := range s.Restrictions {
		for _, sym := range r.Symbols() {
			if !known[sym] {
				d.errs = append(d.errs, &Error{File: d.file, Line: r.Pos.Line, Col: r.Pos.Col,
					Msg: fmt.Sprintf("restrict[%d] %q: %s is not an axis, a variant's define or a shape symbol (%s)", i, r.Text, sym, strings.Join(shapeSymbols, ", "))})
			}
		}
	}
}
