package spec

import (
	"fmt"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
	"gopkg.in/yaml.v3"
)

var tensorMapKeys = []string{"buffer", "dtype", "dims", "strides", "box", "element_strides", "interleave", "swizzle", "l2_promotion", "oob_fill"}

// tensorMap decodes a CUtensorMap argument: {buffer, dtype, dims, box} and
// optionally strides, element_strides and the modes. What a declaration
// alone can break (the rank, the lists' lengths, a literal entry out of
// the driver's range, an unknown mode) is an error here at its node; an
// expression's value is checked by the plan at every point
// (plan/tensormap.go).
func (d *decoder) tensorMap(n *yaml.Node, where string, e *engineNodes) abi.Arg {
	m := &abi.TensorMap{Line: n.Line, Col: n.Column}
	lists := map[abi.TensorMapEntry][]*yaml.Node{}
	seen := d.fields(n, where, tensorMapKeys, func(key string, _, v *yaml.Node) {
		k := where + "." + key
		switch key {
		case "buffer":
			b, err := abi.ParseArg(d.str(v, k))
			if err == nil && (!b.IsBuffer() || b.Name == "") {
				err = fmt.Errorf("%s is not a buffer (a name of the table, or scratch:NAME)", b)
			}
			if err != nil {
				d.errorf(v, "%s: %v", k, err)
			}
			m.Buffer = b
		case "dtype":
			t, err := abi.ParseTensorMapDtype(d.str(v, k))
			if err != nil {
				d.errorf(v, "%s: %v", k, err)
			}
			m.Dtype = t
		case "dims", "strides", "box", "element_strides":
			l, ok := d.list(v, k, false)
			if !ok {
				return
			}
			list := abi.TensorMapEntry(key)
			lists[list] = l
			for i, x := range l {
				src := d.str(x, fmt.Sprintf("%s[%d]", k, i))
				switch list {
				case abi.EntryDims:
					m.Dims = append(m.Dims, src)
				case abi.EntryStrides:
					m.Strides = append(m.Strides, src)
				case abi.EntryBox:
					m.Box = append(m.Box, src)
				case abi.EntryElementStrides:
					m.ElementStrides = append(m.ElementStrides, src)
				}
				e.exprs = append(e.exprs, argExpr{src, fmt.Sprintf("%s[%d]", k, i), x})
			}
		default:
			if err := m.ParseMode(key, d.str(v, k)); err != nil {
				d.errorf(v, "%s: %v", where, err)
			}
		}
	})
	if deref(n).Kind != yaml.MappingNode {
		return abi.Arg{}
	}
	d.require(n, where, seen, "buffer", "dtype", "dims", "box")
	if seen["dims"] != nil && seen["box"] != nil {
		if err := m.CheckStatic(); err != nil {
			d.errorf(n, "%s: %v", where, err)
		}
	}
	// Literal entries are checked here, at their own node.
	for _, list := range []abi.TensorMapEntry{abi.EntryDims, abi.EntryStrides, abi.EntryBox, abi.EntryElementStrides} {
		for i, x := range lists[list] {
			if v, err := strconv.ParseInt(deref(x).Value, 0, 64); err == nil {
				if err := m.CheckEntry(list, i, v); err != nil {
					d.errorf(x, "%s: %v", where, err)
				}
			}
		}
	}
	return abi.Arg{Type: abi.ArgTensorMap, TensorMap: m}
}
