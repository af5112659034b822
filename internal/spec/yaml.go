package spec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// A decoder walks the YAML node tree, so that every mistake it reports
// names the key and its file:line:col. It collects errors rather than
// stopping at the first.
type decoder struct {
	file          string
	errs          ErrorList
	warns         ErrorList      // see warnAt
	axisOverrides []AxisOverride // --axis, in place of the file's values
	fileNKVMax    int            // the largest nkv of the file's own axis, when --axis replaced it
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	e := &Error{File: d.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// errorAt reports at an explicit position (an expression's column inside
// a scalar).
func (d *decoder) errorAt(p Pos, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf(format, args...)})
}

func pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{}
	}
	return Pos{n.Line, n.Column}
}

// deref follows aliases (*name) to the anchored node. The bound guards
// against pathological alias chains; yaml.v3 already rejects cycles.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported YAML node"
}

// fields walks a mapping, calling set for every known key and reporting
// unknown and repeated keys. It returns the key nodes seen, by name, so
// that callers can check required keys and default the rest.
func (d *decoder) fields(n *yaml.Node, where string, known []string, set func(key string, k, v *yaml.Node)) map[string]*yaml.Node {
	seen := map[string]*yaml.Node{}
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s: want a mapping, got %s", where, kindName(n))
		return seen
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "%s: a key must be a plain name, got %s", where, kindName(k))
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.errorf(k, "%s: key %q repeated (first at line %d)", where, k.Value, prev.Line)
			continue
		}
		seen[k.Value] = k
		if known != nil && !contains(known, k.Value) {
			d.errorf(k, "%s: unknown key %q (known: %s)", where, k.Value, strings.Join(known, ", "))
			continue
		}
		set(k.Value, k, v)
	}
	return seen
}

// require reports each missing key of a mapping at the mapping's position.
func (d *decoder) require(n *yaml.Node, where string, seen map[string]*yaml.Node, keys ...string) {
	for _, k := range keys {
		if _, ok := seen[k]; !ok {
			d.errorf(deref(n), "%s: missing required key %q", where, k)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scalar returns the text of a scalar node; anything else is an error.
func (d *decoder) scalar(n *yaml.Node, key string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, "%s: want a value, got %s", key, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, key string) string {
	s, _ := d.scalar(n, key)
	return s
}

func (d *decoder) integer(n *yaml.Node, key string) (int, bool) {
	if _, ok := d.scalar(n, key); !ok {
		return 0, false
	}
	var v int64
	if n.Tag != "!!int" {
		d.errorf(n, "%s: want an integer, got %q", key, n.Value)
		return 0, false
	}
	if n.Decode(&v) != nil || v < math.MinInt32 || v > math.MaxInt32 {
		d.errorf(n, "%s", intRangeMsg(key, n.Value))
		return 0, false
	}
	return int(v), true
}

func (d *decoder) number(n *yaml.Node, key string) (float64, bool) {
	if _, ok := d.scalar(n, key); !ok {
		return 0, false
	}
	var v float64
	if (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.errorf(n, "%s: want a number, got %q", key, n.Value)
		return 0, false
	}
	return v, true
}

// seconds accepts a Go duration ("2s", "500ms", "1m30s") or a plain number
// of seconds.
func (d *decoder) seconds(n *yaml.Node, key string) (float64, bool) {
	s, ok := d.scalar(n, key)
	if !ok {
		return 0, false
	}
	if n.Tag == "!!int" || n.Tag == "!!float" {
		return d.number(n, key)
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(n, "%s: want a duration such as 2s or 500ms, got %q", key, s)
		return 0, false
	}
	return dur.Seconds(), true
}

// list returns the elements of a sequence node. A scalar is accepted as a
// one-element list when scalarOK is set (defines: {NR: 4}).
func (d *decoder) list(n *yaml.Node, key string, scalarOK bool) ([]*yaml.Node, bool) {
	switch {
	case n.Kind == yaml.SequenceNode:
		out := make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			out[i] = deref(c)
		}
		return out, true
	case scalarOK && n.Kind == yaml.ScalarNode && n.Tag != "!!null":
		return []*yaml.Node{n}, true
	}
	d.errorf(n, "%s: want a list, got %s", key, kindName(n))
	return nil, false
}

// exprPos is the position of the first character of an expression written
// as a scalar: quoted scalars start one column after their quote.
func exprPos(n *yaml.Node) Pos {
	p := pos(n)
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		p.Col++
	}
	return p
}
