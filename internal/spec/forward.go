package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/expr"
	"gopkg.in/yaml.v3"
)

// An engine's kernel is compiled with the defines it asks for and no
// other: a variant that declares forward gets none of ktune's own
// (HEAD_DIM, KV_F16, SPLITS, the axes, PDL …), only the ones forward
// names, each under the engine's own name with a value computed at every
// point. A define ktune passed unasked could rewrite an identifier of the
// engine's sources (vLLM's template parameter PARTITION_SIZE: -DPARTITION_SIZE=512
// turns `int PARTITION_SIZE` into `int 512`). An entry's template
// arguments may read the point's values too, written {EXPR} in the entry:
//
//	forward: {VLLM_PARTITION: PARTITION_SIZE}   # -DVLLM_PARTITION=512 at PARTITION_SIZE 512
//	launches:
//	  - entry: "paged_attention_v2_kernel<uint16_t, uint16_t, {head_dim}, 16, 128, {PARTITION_SIZE}>"

// A Forward is one define an engine's kernel is compiled with: Name, as
// the engine spells it, set to Value, an integer expression over the
// geometry symbols and the variant's defines, or the name of a define
// (whose value is then passed as it is, an integer or not).
type Forward struct {
	Name, Value string
	Pos         Pos
}

// entryExpr is one {EXPR} of a launch's entry.
var entryExpr = regexp.MustCompile(`\{([^{}]*)\}`)

// EntryExprs lists the {EXPR} placeholders of an entry, without braces.
func EntryExprs(entry string) []string {
	var out []string
	for _, m := range entryExpr.FindAllStringSubmatch(entry, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

// ExpandEntry replaces each {EXPR} of an entry with value(EXPR).
func ExpandEntry(entry string, value func(string) (string, error)) (string, error) {
	var first error
	out := entryExpr.ReplaceAllStringFunc(entry, func(m string) string {
		v, err := value(strings.TrimSpace(m[1 : len(m)-1]))
		if err != nil && first == nil {
			first = fmt.Errorf("entry %q, {%s}: %w", entry, strings.TrimSpace(m[1:len(m)-1]), err)
		}
		return v
	})
	return out, first
}

// forward decodes a variant's forward mapping.
func (d *decoder) forward(n *yaml.Node, where string, vns *variantNodes) []Forward {
	vns.forward = n
	out := []Forward{} // present, even empty: the variant is sealed
	d.fields(n, where, nil, func(name string, kn, vn *yaml.Node) {
		k := where + "." + name
		if !defineRE.MatchString(name) {
			d.errorf(kn, "%s: %q is not a C identifier (it is passed as -D%s=…)", k, name, name)
			return
		}
		val, ok := d.scalar(vn, k)
		if !ok {
			return
		}
		if strings.TrimSpace(val) == "" {
			d.errorf(vn, "%s: empty: want an expression or a define's name", k)
			return
		}
		out = append(out, Forward{Name: name, Value: strings.TrimSpace(val), Pos: pos(vn)})
		vns.forwardVals = append(vns.forwardVals, vn)
	})
	return out
}

// forwardExprs checks variant i's forwarded values and its entries'
// placeholders once the axes are known: each an expression of the
// geometry symbols and the variant's defines, or a define's name; never
// nkv (a kernel is compiled once for every length).
func (d *decoder) forwardExprs(s *Spec, i int, w *where) {
	v, vn := &s.Variants[i], w.variants[i]
	isDefine := func(x string) bool {
		return slices.ContainsFunc(s.DefineAxes(v), func(a Axis) bool { return a.Name == x })
	}
	check := func(src string, n *yaml.Node, key string) {
		switch {
		case isDefine(src):
		case src == NKV || slices.Contains(exprSymbols(src), NKV):
			d.errorf(n, "variants[%d] (%s).%s: %q reads nkv: a kernel is compiled once for every length", i, v.Name, key, src)
		default:
			d.checkExprWith(s, i, src, n, key, nil)
		}
	}
	if v.StdHeaders && (v.Builtin != nil || len(v.Dispatch) > 0 || v.Artifact != "") {
		d.errorf(vn.stdHeaders, "variants[%d] (%s).std_headers: only a kernel NVRTC compiles from an engine's source takes std_headers (a built-in has its headers, a prebuilt file is built)", i, v.Name)
	}
	if v.Forward != nil && (v.Builtin != nil || len(v.Dispatch) > 0 || v.Artifact != "") {
		d.errorf(vn.forward, "variants[%d] (%s).forward: only a kernel NVRTC compiles from an engine's source takes forward (a built-in needs ktune's defines, a prebuilt file none)", i, v.Name)
		return
	}
	for j, f := range v.Forward {
		check(f.Value, vn.forwardVals[j], "forward."+f.Name)
	}
	for j, l := range v.Launches {
		for _, x := range EntryExprs(l.Entry) {
			if x == "" {
				d.errorf(vn.engine.launch[j].entry, "variants[%d] (%s).launches[%d].entry: an empty {}", i, v.Name, j)
				continue
			}
			check(x, vn.engine.launch[j].entry, fmt.Sprintf("launches[%d].entry {%s}", j, x))
		}
	}
}

// exprSymbols are the symbols of an expression, none when it does not
// parse (checkExprWith reports that).
func exprSymbols(src string) []string {
	x, err := expr.Parse(src)
	if err != nil {
		return nil
	}
	return x.Symbols()
}
