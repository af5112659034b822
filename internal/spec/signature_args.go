package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"gopkg.in/yaml.v3"
)

// arg decodes one argument of a launch or a struct field: a name of the
// vocabulary, a constant or an integer expression (TYPE:VALUE), null, a
// vector ({uint3: [SPLITS, heads, batch]}) or a struct ({struct: NAME},
// resolved against the variant's structs once it is read).
func (d *decoder) arg(n *yaml.Node, where string, e *engineNodes) abi.Arg {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return abi.NullArg
	}
	if n.Kind == yaml.MappingNode {
		if len(n.Content) != 2 {
			d.errorf(n, "%s: a vector, struct or tensor map argument is a mapping of one key ({uint3: [x, y, z]}, {struct: NAME}, {tensor_map: {...}})", where)
			return abi.Arg{}
		}
		key, val := deref(n.Content[0]).Value, deref(n.Content[1])
		if key == "struct" {
			a := abi.Arg{Type: abi.ArgStruct, Struct: &abi.Struct{Name: d.str(val, where+".struct")}}
			return a
		}
		if key == "tensor_map" {
			return d.tensorMap(val, where+".tensor_map", e)
		}
		l, ok := d.list(val, where+"."+key, false)
		if !ok {
			return abi.Arg{}
		}
		comps := make([]string, len(l))
		for i, c := range l {
			comps[i] = d.str(c, fmt.Sprintf("%s.%s[%d]", where, key, i))
		}
		a, err := abi.ParseVector(key, comps)
		if err != nil {
			d.errorf(n, "%s: %v", where, err)
			return abi.Arg{}
		}
		for i, c := range a.Elems {
			if c.IsExpr() {
				e.exprs = append(e.exprs, argExpr{c.Value, fmt.Sprintf("%s.%s[%d]", where, key, i), l[i]})
			}
		}
		return a
	}
	a, err := abi.ParseArg(d.str(n, where))
	if err != nil {
		d.errorf(n, "%s: %v", where, err)
		return abi.Arg{}
	}
	if a.IsExpr() {
		e.exprs = append(e.exprs, argExpr{a.Value, where, n})
	}
	return a
}

var structKeys = []string{"fields", "size", "align", "type"} // type: layoutcheck.go
var fieldKeys = []string{"name", "arg", "struct", "count", "offset"}

// structs decodes a variant's by-value structs: a mapping of name to
// {fields, size, align}, each field {name, arg or struct, count, offset}.
func (d *decoder) structs(n *yaml.Node, where string, e *engineNodes) map[string]*abi.Struct {
	out := map[string]*abi.Struct{}
	d.fields(n, where, nil, func(name string, _, sv *yaml.Node) {
		st := &abi.Struct{Name: name}
		k := where + "." + name
		seen := d.fields(sv, k, structKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "size":
				st.Size, _ = d.integer(v, k+".size")
			case "align":
				st.Align, _ = d.integer(v, k+".align")
			case "type":
				d.structType(name, v, k+".type", e) // layoutcheck.go
			case "fields":
				l, ok := d.list(v, k+".fields", false)
				if !ok {
					return
				}
				for j, fn := range l {
					st.Fields = append(st.Fields, d.field(fn, fmt.Sprintf("%s.fields[%d]", k, j), e))
				}
			}
		})
		if deref(sv).Kind == yaml.MappingNode {
			d.require(sv, k, seen, "fields")
		}
		out[name] = st
	})
	return out
}

func (d *decoder) field(n *yaml.Node, where string, e *engineNodes) abi.Field {
	f := abi.Field{Offset: -1}
	seen := d.fields(n, where, fieldKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "name":
			f.Name = d.str(v, where+".name")
		case "arg":
			f.Arg = d.arg(v, where+".arg", e)
		case "struct":
			f.Arg = abi.Arg{Type: abi.ArgStruct, Struct: &abi.Struct{Name: d.str(v, where+".struct")}}
		case "count":
			if c, ok := d.integer(v, where+".count"); ok {
				if c < 1 {
					d.errorf(v, "%s.count: %d: an array has at least one element", where, c)
				}
				f.Count = c
			}
		case "offset":
			if o, ok := d.integer(v, where+".offset"); ok {
				if o < 0 {
					d.errorf(v, "%s.offset: %d is negative", where, o)
				}
				f.Offset = o
			}
		}
	})
	if deref(n).Kind == yaml.MappingNode {
		d.require(n, where, seen, "name")
		if (seen["arg"] == nil) == (seen["struct"] == nil) {
			d.errorf(n, "%s: a field has either arg (a value of the vocabulary) or struct (a nested struct)", where)
		}
	}
	return f
}

// resolveStructs replaces every struct argument's name by its
// declaration, refusing an unknown name and a struct that contains
// itself, and checks each struct's layout.
func (d *decoder) resolveStructs(v *Variant, e *engineNodes, where string) {
	var resolve func(a *abi.Arg, path []string, n *yaml.Node)
	resolve = func(a *abi.Arg, path []string, n *yaml.Node) {
		if a.Struct == nil {
			return
		}
		name := a.Struct.Name
		st, ok := v.Structs[name]
		if !ok {
			declared := "the variant declares none"
			if len(v.Structs) > 0 {
				declared = "declared: " + strings.Join(sortedKeys(v.Structs), ", ")
			}
			d.errorf(n, "%s: struct %q is not declared under structs (%s)", where, name, declared)
			a.Struct = &abi.Struct{Name: name}
			return
		}
		if slices.Contains(path, name) {
			d.errorf(n, "%s: struct %s contains itself (%s)", where, name, strings.Join(append(path, name), " > "))
			a.Struct = &abi.Struct{Name: name}
			return
		}
		a.Struct = st
		for i := range st.Fields {
			resolve(&st.Fields[i].Arg, append(path, name), n)
		}
	}
	for j := range v.Launches {
		for k := range v.Launches[j].Args {
			resolve(&v.Launches[j].Args[k], nil, e.launch[j].args)
		}
	}
	for _, name := range sortedKeys(v.Structs) {
		for i := range v.Structs[name].Fields {
			resolve(&v.Structs[name].Fields[i].Arg, []string{name}, e.structs)
		}
	}
	for _, name := range sortedKeys(v.Structs) {
		if _, err := v.Structs[name].Layout(); err != nil {
			d.errorf(e.structs, "%s.structs: %v", where, err)
		}
	}
}

func sortedKeys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var scratchKeys = []string{"bytes", "fill", "shadow"}

// scratch decodes a variant's named scratch buffers: a mapping of name to
// {bytes: EXPR, fill: zero | poison | never}.
func (d *decoder) scratch(n *yaml.Node, where string, e *engineNodes) []abi.Scratch {
	var out []abi.Scratch
	d.fields(n, where, nil, func(name string, kn, sv *yaml.Node) {
		k := where + "." + name
		vocabulary := abi.BufferNamed(name) != nil || abi.ScalarNamed(name) != nil
		sc := abi.Scratch{Name: name, Fill: abi.FillZero}
		var bytesNode, shadowNode *yaml.Node
		seen := d.fields(sv, k, scratchKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "shadow":
				shadowNode = v
				if p, ok := d.scalar(v, k+".shadow"); ok && p != "true" {
					d.errorf(v, "%s.shadow: want true (the buffer is named like a word of the vocabulary on purpose), got %q", k, p)
				}
			case "bytes":
				sc.Bytes, bytesNode = d.str(v, k+".bytes"), v
			case "fill":
				f, err := abi.ParseScratchFill(d.str(v, k+".fill"))
				if err != nil {
					d.errorf(v, "%s.fill: %v", k, err)
				}
				sc.Fill = f
			}
		})
		if deref(sv).Kind == yaml.MappingNode {
			d.require(sv, k, seen, "bytes")
		}
		// scratch:NAME always names the scratch buffer, so a name of the
		// vocabulary is no ambiguity in the arguments; it is refused
		// unless shadow: true says it is meant (vLLM's k_scale).
		switch {
		case vocabulary && shadowNode == nil:
			d.errorf(kn, "%s: %s is a name of the vocabulary; give the scratch buffer a name of its own, or shadow: true to keep the engine's (scratch:%s passes it, %s the vocabulary's)", k, name, name, name)
		case !vocabulary && shadowNode != nil:
			d.errorf(shadowNode, "%s.shadow: %s is no name of the vocabulary: there is nothing to shadow", k, name)
		}
		if bytesNode == nil {
			bytesNode = sv
		}
		out, e.scratchBytes = append(out, sc), append(e.scratchBytes, bytesNode)
	})
	return out
}
