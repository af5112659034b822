package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/measure"
)

// Load reads and parses the spec file at path against a kernel set (the
// built-ins are variants.Builtins(); the spec does not pick them itself,
// so that it depends on what a kernel is, not on ktune's list of them).
func Load(path string, kernels catalog.Set) (*Spec, error) {
	return LoadWith(path, kernels, nil)
}

// LoadWith is Load with axes given on the command line (ParseWith).
func LoadWith(path string, kernels catalog.Set, axes []AxisOverride) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	return ParseWith(path, data, kernels, axes)
}

// Parse decodes and validates a spec against the given kernel set.
// name is the file name used in error messages; user kernel paths resolve
// against its directory. Mistakes are returned as an ErrorList of *Error,
// each printed file:line:col: message.
func Parse(name string, data []byte, kernels catalog.Set) (*Spec, error) {
	return ParseWith(name, data, kernels, nil)
}

// ParseWith is Parse with axes given on the command line (--axis NAME=V,…)
// in place of the file's values: each is checked as the file's would be,
// its mistakes reported at the axis in the file.
func ParseWith(name string, data []byte, kernels catalog.Set, axes []AxisOverride) (*Spec, error) {
	d := &decoder{file: name, axisOverrides: axes}
	s := &Spec{Path: name, Dir: filepath.Dir(name)}
	root, err := document(name, data)
	if err != nil {
		return nil, err
	}
	w := d.decode(root, s)
	if len(d.errs) == 0 {
		// Cross-references are only meaningful once every section decoded.
		d.validate(s, w, kernels)
		d.restrictSymbols(s)
	}
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	s.Warnings = d.warns.sorted()
	return s, nil
}

// yamlLine matches the position yaml.v3 puts in its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are yaml.v3's parser (not scanner) messages. For these it
// prints the 0-based line of the construct being parsed (v3.0.1 adds one
// only for scanner errors), so ktune adds the missing one.
var parserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>",
	"found undefined tag handle", "did not find expected node content",
	"did not find expected '-' indicator", "did not find expected key",
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found duplicate %YAML directive", "found incompatible YAML document", "found duplicate %TAG directive",
}

// document parses the YAML text into its single document's root node.
func document(name string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrorList{{File: name, Msg: "empty spec"}}
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			if contains(parserProblems, m[2]) {
				line++
			}
			return nil, ErrorList{{File: name, Line: line, Msg: "YAML: " + m[2]}}
		}
		return nil, ErrorList{{File: name, Msg: err.Error()}}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		line := next.Line
		if err != nil {
			line = 0
		}
		return nil, ErrorList{{File: name, Line: line, Msg: "a spec is a single YAML document; remove the '---' separator"}}
	}
	if len(doc.Content) == 0 {
		return nil, ErrorList{{File: name, Msg: "empty spec"}}
	}
	return doc.Content[0], nil
}

// where keeps the nodes that validation needs for its positions after
// decoding.
type where struct {
	root          *yaml.Node
	seen          map[string]*yaml.Node
	landedVariant *yaml.Node
	landedDefines map[string]*yaml.Node
	variants      []*variantNodes
}

type variantNodes struct {
	node    *yaml.Node
	name    *yaml.Node
	kernel  *yaml.Node
	arms    []*armNodes
	bitwise *yaml.Node
	// invariant is the invariant key's value, for messages.
	invariant *yaml.Node
	defines   map[string][]*yaml.Node
	defKeys   map[string]*yaml.Node
	grid      []*yaml.Node
	block     []*yaml.Node
	shared    *yaml.Node
	engine    engineNodes
	cluster   []*yaml.Node
	// nonPortable is cluster_nonportable's value.
	nonPortable *yaml.Node
	// forward is the forward key's node, forwardVals its values'.
	forward     *yaml.Node
	forwardVals []*yaml.Node
	// stdHeaders is std_headers' value.
	stdHeaders *yaml.Node
	// build and hostHeaders are the build and host_headers keys' values.
	build, hostHeaders *yaml.Node
}

var topKeys = []string{"version", "name", "description", "landed", "shapes", "axes", "restrict", "variants", "probes", "gates", "measure", "engine"}

func (d *decoder) decode(root *yaml.Node, s *Spec) *where {
	w := &where{root: root, landedDefines: map[string]*yaml.Node{}}
	s.Version = SpecVersion
	var newer *Error
	s.Gates = defaultGates()
	s.Measure = defaultMeasure()
	s.Probes = []string{string(measure.Cold), string(measure.Hot)}
	w.seen = d.fields(root, "spec", topKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "version":
			if x, ok := d.integer(v, "version"); ok {
				if x < 1 || x > SpecVersion {
					newer = &Error{File: d.file, Line: v.Line, Col: v.Column,
						Msg: fmt.Sprintf("version: this ktune reads spec version %d, not %d", SpecVersion, x)}
				}
				s.Version = x
			}
		case "name":
			s.Name = d.str(v, "name")
			d.label(v, "name", s.Name)
		case "description":
			s.Description = d.str(v, "description")
		case "landed":
			d.landed(k, v, s, w)
		case "shapes":
			if l, ok := d.list(v, "shapes", false); ok {
				if len(l) == 0 {
					d.errorf(v, "shapes: empty list: a spec needs at least one shape")
				}
				for i, n := range l {
					s.Shapes = append(s.Shapes, d.shape(n, i))
				}
			}
		case "axes":
			d.axes(v, s, w)
		case "restrict":
			d.restrict(v, s)
		case "variants":
			if l, ok := d.list(v, "variants", false); ok {
				if len(l) == 0 {
					d.errorf(v, "variants: empty list: a spec needs at least one variant")
				}
				for i, n := range l {
					vr, vn := d.variant(n, i)
					s.Variants = append(s.Variants, vr)
					w.variants = append(w.variants, vn)
				}
			}
		case "probes":
			d.probes(v, s)
		case "gates":
			d.gates(v, &s.Gates)
		case "measure":
			d.measure(v, &s.Measure)
		case "engine":
			s.Engine = d.engine(v)
		}
	})
	if newer != nil {
		// A newer format's other keys would only add noise.
		d.errs = ErrorList{newer}
	} else if deref(root).Kind == yaml.MappingNode {
		d.require(root, "spec", w.seen, "name", "shapes", "axes", "variants")
	}
	return w
}

func (d *decoder) landed(k, v *yaml.Node, s *Spec, w *where) {
	s.Landed.Pos = pos(v)
	if v.Kind == yaml.ScalarNode {
		s.Landed.Variant = d.str(v, "landed")
		w.landedVariant = v
		return
	}
	seen := d.fields(v, "landed", []string{"variant", "defines"}, func(key string, _, val *yaml.Node) {
		switch key {
		case "variant":
			s.Landed.Variant = d.str(val, "landed.variant")
			w.landedVariant = val
		case "defines":
			s.Landed.Defines = map[string]string{}
			d.fields(val, "landed.defines", nil, func(name string, _, dv *yaml.Node) {
				s.Landed.Defines[name] = d.str(dv, "landed.defines."+name)
				w.landedDefines[name] = dv
			})
		}
	})
	d.require(v, "landed", seen, "variant")
}

var shapeKeys = append([]string{"name", "heads", "kv_heads", "head_dim", "kv_dtype", "kv_scale", "batch", "capacity"}, attentionKeys...)

func (d *decoder) shape(n *yaml.Node, i int) Shape {
	sh := Shape{Shape: abi.Shape{Batch: 1}, Pos: pos(n)}
	where := fmt.Sprintf("shapes[%d]", i)
	var kvNode, scaleNode *yaml.Node
	seen := d.fields(n, where, shapeKeys, func(key string, _, v *yaml.Node) {
		k := where + "." + key
		switch key {
		case "name":
			sh.Name = d.str(v, k)
			d.label(v, k, sh.Name)
		case "heads":
			// The default geometry puts heads in grid y and batch in grid z,
			// which CUDA limits to 65535.
			sh.Heads = d.bounded(v, k, 1, 65535)
		case "kv_heads":
			sh.KVHeads, kvNode = d.bounded(v, k, 1, 65535), v
		case "head_dim":
			// The combine kernel runs one thread per dimension (≤ 1024 per
			// block) and the partial rows are float4-aligned (PSTR =
			// HEAD_DIM + 4), so head_dim is a multiple of 4 up to 1024.
			sh.HeadDim = d.bounded(v, k, 4, 1024)
			if sh.HeadDim%4 != 0 {
				d.errorf(v, "%s: %d is not a multiple of 4 (partial rows are float4-aligned)", k, sh.HeadDim)
			}
		case "kv_dtype":
			sh.KVDtype = abi.Dtype(d.str(v, k))
			if _, err := kvtype.Lookup(string(sh.KVDtype)); err != nil && sh.KVDtype != "" {
				d.errorf(v, "%s: want one of %s, got %q", k, kvtype.Names(), sh.KVDtype)
			}
		case "kv_scale":
			sh.KVScale, scaleNode = d.str(v, k), v
		case "batch":
			sh.Batch = d.bounded(v, k, 1, 65535)
		case "capacity":
			sh.Capacity = d.bounded(v, k, 1, math.MaxInt32)
		default:
			d.attention(&sh.Attention, key, k, v)
		}
	})
	if deref(n).Kind == yaml.MappingNode {
		d.require(n, where, seen, "name", "heads", "kv_heads", "head_dim", "kv_dtype")
	}
	// kv_scale says how a scaled type's gate inputs choose their scales;
	// a scaled type without it gets one scale per tensor, as the engines'
	// fp8 caches have.
	if t, err := kvtype.Lookup(string(sh.KVDtype)); err == nil {
		if err := t.CheckScale(sh.KVScale); err != nil {
			d.errorf(scaleNode, "%s.kv_scale: %v", where, err)
		} else if t.Scaled && sh.KVScale == "" {
			sh.KVScale = kvtype.ScaleTensor
		}
	}
	d.checkAttention(n, where, &sh)
	if sh.Heads > 0 && sh.KVHeads > 0 && sh.Heads%sh.KVHeads != 0 {
		d.errorf(kvNode, "%s.kv_heads: heads %d is not a multiple of kv_heads %d (each KV head serves heads/kv_heads query heads)",
			where, sh.Heads, sh.KVHeads)
	}
	return sh
}

// bounded decodes an integer in [lo, hi].
func (d *decoder) bounded(v *yaml.Node, k string, lo, hi int) int {
	x, ok := d.integer(v, k)
	if ok && (x < lo || x > hi) {
		if hi == math.MaxInt32 {
			d.errorf(v, "%s: want ≥ %d, got %d", k, lo, x)
		} else {
			d.errorf(v, "%s: want %d to %d, got %d", k, lo, hi, x)
		}
	}
	return x
}

// labelRE is what names of specs, shapes and variants may contain: they end
// up in file names and table cells.
var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (d *decoder) label(v *yaml.Node, k, s string) {
	if s != "" && !labelRE.MatchString(s) {
		d.errorf(v, "%s: %q: use letters, digits, '.', '_' and '-' (it names files and table rows)", k, s)
	}
}

// axes decodes the axes mapping: nkv first in Spec.Axes whatever its place
// in the file, then the defines in file order.
func (d *decoder) axes(n *yaml.Node, s *Spec, w *where) {
	var defs []Axis
	seen := d.fields(n, "axes", nil, func(key string, k, v *yaml.Node) {
		where := "axes." + key
		if key != NKV && !d.defineName(k, where) {
			return
		}
		if o := d.axisOverride(key, v); o != nil {
			if key == NKV {
				d.fileNKVMax = largestInt(v)
			}
			v, where = o, where+" (--axis)"
		}
		l, ok := d.list(v, where, false)
		if !ok {
			return
		}
		ax := Axis{Name: key, Pos: pos(k), Values: d.defineValues(key, where, v, l)}
		if key == NKV {
			for _, e := range l {
				if x, ok := d.integer(e, where); ok && x < 1 {
					d.errorf(e, "%s: %d is not a context length (want ≥ 1)", where, x)
				}
			}
			s.Axes = append([]Axis{ax}, s.Axes...)
		} else {
			defs = append(defs, ax)
		}
	})
	s.Axes = append(s.Axes, defs...)
	if deref(n).Kind == yaml.MappingNode {
		d.require(n, "axes", seen, NKV)
	}
	d.unknownOverrides(n, s)
}

// defineRE is a C identifier: the name goes to NVRTC as -DNAME=value.
var defineRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// defineName checks the name of a define (an axis or a variant define).
func (d *decoder) defineName(k *yaml.Node, where string) bool {
	name := k.Value
	switch {
	case !defineRE.MatchString(name):
		d.errorf(k, "%s: %q is not a C identifier (it is passed as -D%s=…)", where, name, name)
	case abi.Derived(name):
		d.errorf(k, "%s: %s is set from each shape (head_dim, kv_dtype); sweep shapes instead", where, name)
	case name == abi.DefinePSTR:
		d.errorf(k, "%s: PSTR is fixed by the ABI (HEAD_DIM + 4)", where)
	case contains(Symbols, name):
		d.errorf(k, "%s: %q is a shape symbol of the geometry expressions; name the define differently", where, name)
	default:
		return true
	}
	return false
}

// countDefines are the defines that count something and so must be
// integers ≥ 1 for every kernel: SPLITS (KV splits per head, part of the
// ABI) and NR (rows per register window, in every seed kernel).
var countDefines = []string{Splits, "NR"}

// defineValues checks the values of a define and returns their text.
func (d *decoder) defineValues(name, where string, list *yaml.Node, l []*yaml.Node) []string {
	if len(l) == 0 {
		d.errorf(list, "%s: empty list: an axis needs at least one value", where)
	}
	var out []string
	first := map[string]*yaml.Node{}
	for _, e := range l {
		v, ok := d.scalar(e, where)
		if !ok {
			continue
		}
		if prev, dup := first[v]; dup {
			d.errorf(e, "%s: value %s repeated (first at line %d)", where, v, prev.Line)
			continue
		}
		first[v] = e
		switch {
		case v == "" || strings.ContainsAny(v, " \t\r\n\v\f"):
			d.errorf(e, "%s: %q: a define value is one token without spaces", where, v)
		case contains(countDefines, name):
			if x, ok := d.integer(e, where); ok && x < 1 {
				d.errorf(e, "%s: %s=%d: %s counts something and must be ≥ 1", where, name, x, name)
			}
		}
		out = append(out, v)
	}
	return out
}

var variantKeys = append([]string{"name", "kernel", "dispatch", "defines", "bitwise_with", "grid", "block", "shared",
	"include", "flags", "io", "scratch", "planned", "structs", "launches", "graph", "pdl", "cluster", "cluster_nonportable", "lse",
	"forward", "std_headers", "host_headers", "build", "invariant"}, budgetKeys...)

func (d *decoder) variant(n *yaml.Node, i int) (Variant, *variantNodes) {
	v := Variant{Pos: pos(n), Defines: map[string][]string{}}
	vn := &variantNodes{node: n, defines: map[string][]*yaml.Node{}, defKeys: map[string]*yaml.Node{}}
	where := fmt.Sprintf("variants[%d]", i)
	seen := d.fields(n, where, variantKeys, func(key string, _, val *yaml.Node) {
		k := where + "." + key
		switch key {
		case "name":
			v.Name, vn.name = d.str(val, k), val
			d.label(val, k, v.Name)
		case "kernel":
			v.Kernel, vn.kernel = d.expandEnv(d.str(val, k), val, k), val
		case "dispatch":
			v.Dispatch, vn.arms = d.dispatch(val, k)
		case "bitwise_with":
			v.BitwiseWith, vn.bitwise = d.str(val, k), val
		case "lse":
			v.LSE = d.lse(val, k)
		case "invariant":
			v.Invariant, vn.invariant = d.invariant(val, k), val
		case "defines":
			d.fields(val, k, nil, func(name string, kn, dv *yaml.Node) {
				if !d.defineName(kn, k+"."+name) {
					return
				}
				l, ok := d.list(dv, k+"."+name, true)
				if !ok {
					return
				}
				v.DefineOrder = append(v.DefineOrder, name)
				v.Defines[name] = d.defineValues(name, k+"."+name, dv, l)
				vn.defines[name], vn.defKeys[name] = l, kn
			})
		case "grid", "block":
			l, ok := d.list(val, k, false)
			if !ok {
				return
			}
			if len(l) < 1 || len(l) > 3 {
				hint := ""
				for _, e := range l {
					if strings.Count(e.Value, "(") != strings.Count(e.Value, ")") {
						hint = ` (YAML splits a flow list at commas: quote an expression that has one, as in ["cdiv(nkv, 64)", heads])`
					}
				}
				d.errorf(val, "%s: want 1 to 3 expressions (x, y, z), got %d%s", k, len(l), hint)
				return
			}
			for _, e := range l {
				if key == "grid" {
					v.Grid, vn.grid = append(v.Grid, d.str(e, k)), append(vn.grid, e)
				} else {
					v.Block, vn.block = append(v.Block, d.str(e, k)), append(vn.block, e)
				}
			}
		case "shared":
			v.Shared, vn.shared = d.str(val, k), val
		case "include", "flags", "io", "scratch", "planned", "structs", "launches":
			d.engineKey(key, k, val, &v, vn)
		case "forward":
			v.Forward = d.forward(val, k, vn)
		case "build":
			vn.build = val
			v.Build = d.build(val, k) // build.go
		case "host_headers":
			vn.hostHeaders = val
			if l, ok := d.list(val, k, true); ok {
				for _, h := range l {
					v.HostHeaders = append(v.HostHeaders, d.str(h, k))
				}
			}
		case "std_headers":
			vn.stdHeaders = val
			switch p, ok := d.scalar(val, k); {
			case ok && p == "true":
				v.StdHeaders = true
			case ok && p != "false":
				d.errorf(val, "%s: want true or false, got %q", k, p)
			}
		case "pdl":
			switch p, ok := d.scalar(val, k); {
			case ok && p == "true":
				v.PDL = true
			case ok && p != "false":
				d.errorf(val, "%s: want true or false, got %q", k, p)
			}
		case "cluster":
			v.Cluster, vn.cluster = d.cluster(val, k)
		case "max_registers", "no_spills", "max_shared":
			d.budgetKey(key, k, val, &v.Budget)
		case "cluster_nonportable":
			vn.nonPortable = val
			switch p, ok := d.scalar(val, k); {
			case ok && p == "true":
				v.ClusterNonPortable = true
			case ok && p != "false":
				d.errorf(val, "%s: want true or false, got %q", k, p)
			}
		case "graph":
			// One value for now: the default is that a kernel may be
			// captured, and saying so needs no key.
			if g, ok := d.scalar(val, k); ok && g == "never" {
				v.NeverCaptured = true
			} else if ok {
				d.errorf(val, "%s: want never (the engine never captures this kernel in a CUDA graph), got %q", k, g)
			}
		}
	})
	if deref(n).Kind == yaml.MappingNode {
		d.require(n, where, seen, "name")
		if _, ok := seen["dispatch"]; ok {
			d.dispatchKeys(where, seen)
		} else {
			if slices.Contains(v.Invariant, InvariantArm) {
				d.errorf(vn.invariant, "%s.invariant: arm needs a dispatch variant (its arms are the kernels compared)", where)
			}
			d.require(n, where, seen, "kernel")
		}
	}
	return v, vn
}
