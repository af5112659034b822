package spec

import (
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/ktune/ktune/internal/expr"
)

const (
	// maxPoints bounds the sweep: a spec past it is almost always an axis
	// written by mistake, and the plan would not fit in memory anyway.
	maxPoints = 1_000_000
	// maxKVBytes refuses shapes whose K and V alone exceed 1 TiB: no GPU
	// holds them, and the number is usually a typo in capacity or batch.
	maxKVBytes = 1 << 40
)

// validate checks what spans sections: references between variants, the
// landed configuration, kernels, expressions and the size of the sweep.
func (d *decoder) validate(s *Spec, w *where, kernels catalog.Set) {
	d.emptyNames(s, w)
	if len(d.errs) > 0 {
		return
	}
	d.shapes(s, w)
	d.kernels(s, w, kernels)
	d.engineKernels(s, w)
	d.optionArgs(s)
	d.layoutArgs(s)
	d.references(s, w)
	if len(d.errs) > 0 {
		return
	}
	d.twinIO(s, w)
	d.geometry(s, w)
	d.splitsBound(s, w)
	d.landedRefs(s, w)
	if len(d.errs) > 0 {
		return
	}
	d.coverage(s, w)
	d.strictness(s, w)
}

func (d *decoder) shapes(s *Spec, w *where) {
	largest := 0
	for _, n := range s.NKVs() {
		largest = max(largest, n)
	}
	gateMax := 0
	for _, n := range s.Gates.NKV {
		gateMax = max(gateMax, n)
	}
	// A default capacity holds the file's own nkv axis too when --axis
	// replaced it: a narrowed run plans the file's points, hashes and
	// all (the capacity is part of a point).
	defaultCap := max(largest, gateMax, d.fileNKVMax)
	names := map[string]int{}
	for i := range s.Shapes {
		sh := &s.Shapes[i]
		at := sh.Pos
		if prev, dup := names[sh.Name]; dup {
			d.errorAt(at, "shapes[%d]: shape name %q repeated (first at line %d)", i, sh.Name, prev)
		}
		names[sh.Name] = sh.Pos.Line
		switch {
		case sh.Capacity == 0:
			sh.Capacity = defaultCap
		case sh.Capacity < largest:
			d.errorAt(at, "shapes[%d] (%s): capacity %d is below the largest nkv %d of the axes", i, sh.Name, sh.Capacity, largest)
		}
		// The new tokens are part of the context: a sequence holds at
		// least q_len rows.
		if T := sh.Attention.Queries(); T > 1 && slices.Min(s.NKVs()) < T {
			d.errorAt(at, "shapes[%d] (%s): q_len %d is longer than the shortest nkv %d of the axes (the new tokens are part of the context)",
				i, sh.Name, T, slices.Min(s.NKVs()))
		}
		if b := sh.KVBytes(); b > maxKVBytes {
			d.errorAt(at, "shapes[%d] (%s): K and V take %.1f TiB (2 × batch %d × capacity %d × kv_heads %d × head_dim %d × %s); ktune refuses more than 1 TiB",
				i, sh.Name, b/maxKVBytes, sh.Batch, sh.Capacity, sh.KVHeads, sh.HeadDim, sh.KVDtype)
		}
	}
}

// optionArgs refuses a launch that passes alibi_slopes or sinks, in an
// argument or a struct field, when a shape of the spec has no such option:
// the buffer then holds nothing the oracle reads, and the kernel's output
// would be gated against attention without them.
func (d *decoder) optionArgs(s *Spec) {
	for i := range s.Variants {
		v := &s.Variants[i]
		for li, l := range v.Launches {
			for _, arg := range l.Args {
				for _, a := range arg.Leaves() {
					if !a.IsBuffer() {
						continue
					}
					for _, sh := range s.Shapes {
						why := ""
						switch {
						case a.Name == "alibi_slopes" && sh.Attention.ALiBi == "":
							why = "has no alibi"
						case a.Name == "sinks" && !sh.Attention.Sinks:
							why = "has no sinks"
						}
						if why != "" {
							d.errorAt(l.Pos, "variants[%d] (%s).launches[%d]: argument %s: shape %s %s (give the shape the option, or a variant of its own)",
								i, v.Name, li, a.Name, sh.Name, why)
							break
						}
					}
				}
			}
		}
	}
}

// layoutArgs refuses an argument, in a launch or a struct field, that the
// variant's io cannot give a value (abi.IO.Refuses): a batch stride of a
// paged cache, a block table of a contiguous one.
func (d *decoder) layoutArgs(s *Spec) {
	for i := range s.Variants {
		v := &s.Variants[i]
		io := abi.ABIIO
		if v.IO != nil {
			io = *v.IO
		}
		for li, l := range v.Launches {
			for _, arg := range l.Args {
				for _, a := range arg.Leaves() {
					if a.Name == "" || a.IsScratch() {
						continue
					}
					if why := io.Refuses(a.Name); why != "" {
						d.errorAt(l.Pos, "variants[%d] (%s).launches[%d]: argument %s: %s", i, v.Name, li, a.Name, why)
					}
				}
			}
		}
	}
}

// isPath tells a user kernel path from a built-in name.
func isPath(k string) bool {
	return strings.ContainsAny(k, `/\`) || strings.HasSuffix(k, ".cu") || strings.HasSuffix(k, ".cuh") || artifactKind(k) != ""
}

// kernel resolves a kernel name: a path to a user kernel (returned
// resolved against the spec's directory) or a built-in of the set.
func (d *decoder) kernel(s *Spec, name string, at *yaml.Node, where string, kernels catalog.Set) (*catalog.Kernel, string, bool) {
	if isPath(name) {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.Dir, p)
		}
		if msg := kernelFileKind(p); msg != "" {
			d.errorf(at, "%s: kernel %s", where, msg)
			return nil, p, true
		}
		switch fi, err := os.Stat(p); {
		case err != nil && artifactKind(p) != "" && errors.Is(err, fs.ErrNotExist):
			// A prebuilt kernel is a build output: the plan warns that it
			// is missing, and its points fail until it is built.
		case err != nil:
			d.errorf(at, "%s: kernel file %s not found (a path resolves against the spec's directory)", where, p)
		case !fi.Mode().IsRegular():
			d.errorf(at, "%s: kernel %s is not a regular file", where, p)
		}
		return nil, p, true
	}
	k, ok := kernels.Lookup(name)
	if !ok {
		known := "none are registered"
		if names := kernels.Names(); len(names) > 0 {
			known = "built-ins: " + strings.Join(names, ", ")
		}
		d.errorf(at, "%s: unknown built-in kernel %q (%s; a user kernel is a path to a .cu file)", where, name, known)
	}
	return k, "", ok
}

func (d *decoder) kernels(s *Spec, w *where, kernels catalog.Set) {
	for i := range s.Variants {
		v, vn := &s.Variants[i], w.variants[i]
		where := fmt.Sprintf("variants[%d] (%s)", i, v.Name)
		if len(v.Dispatch) > 0 {
			d.armKernels(s, i, w, kernels)
			continue
		}
		d.resolve(s, &v.KernelRef, vn.kernel, where, kernels, v.DefineOrder, vn.defKeys,
			func(name string) ([]string, []*yaml.Node) { return v.Defines[name], vn.defines[name] })
	}
}

// resolve resolves the kernel a variant or a dispatch arm names and checks
// the defines written for it: each must be one the kernel declares (SPLITS
// always passes), with values it accepts. A value written for this variant
// or arm alone is a mistake when the kernel refuses it; a global axis
// value is a skip instead (the plan's). values gives a define's values
// with their nodes: one for an arm, one per axis value for a variant.
func (d *decoder) resolve(s *Spec, ref *KernelRef, at *yaml.Node, where string, kernels catalog.Set,
	order []string, keys map[string]*yaml.Node, values func(string) ([]string, []*yaml.Node)) {
	k, path, ok := d.kernel(s, ref.Kernel, at, where, kernels)
	ref.Path = path
	if !ok || k == nil {
		return
	}
	ref.Builtin = k
	for _, name := range order {
		def, ok := k.Define(name)
		if !ok {
			if name != Splits {
				d.errorf(keys[name], "%s: kernel %s takes no define %s (it takes %s)", where, k.Name, name, declared(k))
			}
			continue
		}
		vals, nodes := values(name)
		for j, val := range vals {
			if err := def.CheckValue(val); err != nil {
				d.errorf(nodes[j], "%s: kernel %s: %v", where, k.Name, err)
			}
		}
	}
}

func declared(k *catalog.Kernel) string {
	names := []string{Splits}
	for _, def := range k.Defines {
		if def.Name != Splits {
			names = append(names, def.Name)
		}
	}
	return strings.Join(names, ", ")
}

func (d *decoder) references(s *Spec, w *where) {
	first := map[string]int{}
	var names []string
	for i, v := range s.Variants {
		if prev, dup := first[v.Name]; dup {
			d.errorf(w.variants[i].name, "variants[%d]: variant name %q repeated (first at line %d)", i, v.Name, prev)
			continue
		}
		first[v.Name] = pos(w.variants[i].name).Line
		names = append(names, v.Name)
	}
	index := map[string]int{}
	for i, v := range s.Variants {
		if _, ok := index[v.Name]; !ok {
			index[v.Name] = i
		}
	}
	for i, v := range s.Variants {
		at := w.variants[i].bitwise
		switch j, ok := index[v.BitwiseWith]; {
		case v.BitwiseWith == "":
		case len(v.Dispatch) > 0:
			// Each arm would need its own twin, byte-identical within the
			// arm's range; one name cannot say that.
			d.errorf(at, "variants[%d] (%s): bitwise_with on a dispatch variant: its arms are different kernels, and no one twin is byte-identical to all of them (give each arm's kernel a variant of its own with bitwise_with; the dispatch is gated in the tolerance class)", i, v.Name)
		case v.BitwiseWith == v.Name:
			d.errorf(at, "variants[%d] (%s): bitwise_with names the variant itself", i, v.Name)
		case !ok:
			d.errorf(at, "variants[%d] (%s): bitwise_with: unknown variant %q (variants: %s)", i, v.Name, v.BitwiseWith, strings.Join(names, ", "))
		case len(s.Variants[j].Dispatch) > 0:
			d.errorf(at, "variants[%d] (%s): bitwise_with: %s is a dispatch variant, which runs a different kernel on each side of a threshold; name a single-kernel variant", i, v.Name, v.BitwiseWith)
		}
	}
	// A cycle (a → b → a) leaves no variant to compare against; report it
	// once, at its first variant in file order.
	for i, v := range s.Variants {
		chain := []string{v.Name}
		for j := i; ; {
			next, ok := index[s.Variants[j].BitwiseWith]
			if !ok || next == j || len(chain) > len(s.Variants) {
				break
			}
			chain = append(chain, s.Variants[next].Name)
			if next == i {
				d.errorf(w.variants[i].bitwise, "variants[%d] (%s): bitwise_with cycle %s: a bitwise class needs a variant outside it to compare against",
					i, v.Name, strings.Join(chain, " → "))
				break
			}
			if next < i {
				break
			}
			j = next
		}
	}
}

func (d *decoder) geometry(s *Spec, w *where) {
	for i := range s.Variants {
		v, vn := &s.Variants[i], w.variants[i]
		for j, src := range v.Grid {
			d.checkExpr(s, i, src, vn.grid[j], fmt.Sprintf("grid[%d]", j))
		}
		for j, src := range v.Block {
			d.checkExpr(s, i, src, vn.block[j], fmt.Sprintf("block[%d]", j))
		}
		if v.Shared != "" {
			d.checkExpr(s, i, v.Shared, vn.shared, "shared")
		}
		d.launchExprs(s, i, w)
		d.forwardExprs(s, i, w)
		d.buildExprs(s, i, w)
		d.plannedExprs(s, i, w)
		d.clusters(s, i, w)
	}
}

// checkExpr checks one expression of variant i: its syntax, and that each
// symbol is a shape symbol or an integer define of the variant.
func (d *decoder) checkExpr(s *Spec, i int, src string, n *yaml.Node, key string) {
	d.checkExprWith(s, i, src, n, key, nil)
}

// checkExprWith is checkExpr that also takes the symbols in extra (an
// argument's expression reads the integer scalars of the ABI's table).
func (d *decoder) checkExprWith(s *Spec, i int, src string, n *yaml.Node, key string, extra []string) {
	v := &s.Variants[i]
	axes := s.DefineAxes(v)
	e, err := expr.Parse(src)
	if err != nil {
		ee := err.(*expr.Error)
		p := exprPos(n)
		p.Col += ee.Col - 1
		d.errorAt(p, "variants[%d] (%s).%s: %s", i, v.Name, key, ee.Msg)
		return
	}
	for _, sym := range e.Symbols() {
		if contains(Symbols, sym) || abi.Derived(sym) || contains(extra, sym) {
			continue
		}
		ax := slices.IndexFunc(axes, func(a Axis) bool { return a.Name == sym })
		if ax < 0 && sym == SymBlocksPerSM && contains(extra, SymSMs) {
			d.errorf(n, "variants[%d] (%s).%s: %q reads blocks_per_sm, which only a grid may read (the occupancy of its launch's own kernel, checked against the grid it sized); write the engine's blocks per SM as a number, as in 8 * sms",
				i, v.Name, key, src)
			continue
		}
		if ax < 0 {
			d.errorf(n, "variants[%d] (%s).%s: unknown symbol %q in %q (symbols: %s, and the variant's defines)",
				i, v.Name, key, sym, src, strings.Join(symbolNames(extra), ", "))
			continue
		}
		for _, val := range axes[ax].Values {
			if _, err := strconv.Atoi(val); err != nil {
				d.errorf(n, "variants[%d] (%s).%s: define %s=%s is not an integer", i, v.Name, key, sym, val)
			}
		}
	}
}

func (d *decoder) landedRefs(s *Spec, w *where) {
	l := s.Landed
	if w.landedVariant == nil || l.Variant == "" {
		return
	}
	v := s.Variant(l.Variant)
	if v == nil {
		d.errorf(w.landedVariant, "landed: unknown variant %q", l.Variant)
		return
	}
	axes := s.DefineAxes(v)
	for name, val := range l.Defines {
		at := w.landedDefines[name]
		i := slices.IndexFunc(axes, func(a Axis) bool { return a.Name == name })
		if i < 0 {
			d.errorf(at, "landed.defines.%s: variant %s takes no define %s", name, v.Name, name)
			continue
		}
		if !contains(axes[i].Values, val) {
			d.errorf(at, "landed.defines.%s: %s is not among the values swept for %s (%s): the landed configuration must be a point of the plan",
				name, val, v.Name, strings.Join(axes[i].Values, ", "))
		}
	}
}

// coverage checks that every variant has a value for each define it needs,
// that a built-in can run at least one combination, and that the sweep has
// a sane size.
func (d *decoder) coverage(s *Spec, w *where) {
	nkv := len(s.NKVs())
	total := 0.0
	for i := range s.Variants {
		v, vn := &s.Variants[i], w.variants[i]
		where := fmt.Sprintf("variants[%d] (%s)", i, v.Name)
		axes := s.DefineAxes(v)
		has := func(name string) bool {
			return slices.ContainsFunc(axes, func(a Axis) bool { return a.Name == name })
		}
		if len(v.Dispatch) > 0 {
			d.armCoverage(s, i, w, has)
		} else if !has(Splits) {
			d.errorf(vn.node, "%s: no value for SPLITS: add an axis SPLITS or defines: {SPLITS: …} to the variant", where)
		}
		if v.Builtin != nil {
			for _, def := range v.Builtin.Defines {
				if !has(def.Name) && !def.Unset {
					d.errorf(vn.node, "%s: kernel %s needs a value for %s (%s): add it to the axes or the variant's defines", where, v.Builtin.Name, def.Name, def.Doc)
				}
			}
		}
		combos := 1.0
		for _, ax := range axes {
			combos *= float64(len(ax.Values))
		}
		total += combos * float64(len(s.Shapes)) * float64(nkv)
	}
	if total > maxPoints {
		d.errorf(w.root, "the sweep has %.0f points; ktune refuses more than %d (check the axes)", math.Min(total, 1e18), maxPoints)
	}
	if len(d.errs) > 0 {
		return
	}
	for i := range s.Variants {
		v := &s.Variants[i]
		if len(v.Dispatch) > 0 {
			d.armRunnable(s, i, w)
			continue
		}
		if v.Builtin == nil {
			continue
		}
		axes := s.DefineAxes(v)
		ok, first := runnable(v.Builtin, s.Shapes, axes, func(sh *Shape, vals []string) map[string]string { return sh.Defines(axes, vals) })
		if !ok {
			d.errorf(w.variants[i].kernel, "variants[%d] (%s): kernel %s cannot run any point of this sweep: %v", i, v.Name, v.Builtin.Name, first)
		}
	}
}

// runnable reports whether the built-in k accepts at least one combination
// of the axes at some shape, and else the first reason it gave; defines
// builds a combination's defines (a variant's, or a dispatch arm's).
func runnable(k *catalog.Kernel, shapes []Shape, axes []Axis, defines func(*Shape, []string) map[string]string) (bool, error) {
	var first error
	for j := range shapes {
		sh := &shapes[j]
		ok := false
		Combinations(axes, func(vals []string) bool {
			err := k.Accepts(sh.Shape, defines(sh, vals))
			if err == nil {
				ok = true
			} else if first == nil {
				first = err
			}
			return !ok
		})
		if ok {
			return true, nil
		}
	}
	return false, first
}

// Launch limits shared by every GPU NVRTC targets (compute capability 5.0
// and later, CUDA Programming Guide, "Compute Capabilities"): a launch
// past them fails with "invalid configuration argument" on the device,
// after minutes of compiling; ktune says so while planning.
const MaxBlockThreads = 1024

var (
	maxBlockDim = [3]int{1024, 1024, 64}
	maxGridDim  = [3]int{1<<31 - 1, 65535, 65535}
)

// CheckLaunch reports a launch geometry no CUDA device accepts; what names
// the kernel ("partial", "combine") in the message.
func CheckLaunch(what string, grid, block [3]int) error {
	threads := 1
	for i, n := range block {
		if n < 1 || n > maxBlockDim[i] {
			return fmt.Errorf("%s block %v: dimension %d is %d, want 1 to %d", what, block, i, n, maxBlockDim[i])
		}
		threads *= n
	}
	if threads > MaxBlockThreads {
		return fmt.Errorf("%s block %v has %d threads; a block holds at most %d", what, block, threads, MaxBlockThreads)
	}
	for i, n := range grid {
		if n < 1 || n > maxGridDim[i] {
			return fmt.Errorf("%s grid %v: dimension %d is %d, want 1 to %d", what, grid, i, n, maxGridDim[i])
		}
	}
	return nil
}

// archPattern is what NVRTC's -arch takes for a real GPU: sm_ and two or
// three digits (sm_90, sm_100), optionally "a" (architecture-specific
// features, sm_90a) or "f" (family, sm_100f).
var archPattern = regexp.MustCompile(`^sm_[0-9]{2,3}[af]?$`)

// CheckArch validates an architecture given on the command line.
func CheckArch(arch string) error {
	if !archPattern.MatchString(arch) {
		return fmt.Errorf("architecture %q: want sm_NN or sm_NNN with an optional a or f suffix (sm_90, sm_90a, sm_100)", arch)
	}
	return nil
}

// MaxSplits bounds SPLITS. A split is a slice of the context one block
// reduces, and the combine kernel reads every split's partial per head:
// past a few thousand, splits are empty at every context a decode step
// sees and the combine dominates. A larger value is nearly always a typo.
const MaxSplits = 4096

// splitsBound refuses SPLITS values outside 1..MaxSplits, on the global
// axis and in the variants' own defines.
func (d *decoder) splitsBound(s *Spec, w *where) {
	bad := func(v string) bool {
		n, err := strconv.Atoi(v)
		return err == nil && (n < 1 || n > MaxSplits)
	}
	for _, ax := range s.Axes {
		if ax.Name != Splits {
			continue
		}
		for _, v := range ax.Values {
			if bad(v) {
				d.errorAt(ax.Pos, "axes.SPLITS: %s is out of range: want 1 to %d splits", v, MaxSplits)
			}
		}
	}
	for i := range s.Variants {
		v, vn := &s.Variants[i], w.variants[i]
		for j, val := range v.Defines[Splits] {
			if !bad(val) {
				continue
			}
			if nodes := vn.defines[Splits]; j < len(nodes) {
				d.errorf(nodes[j], "variants[%d] (%s).defines.SPLITS: %s is out of range: want 1 to %d splits", i, v.Name, val, MaxSplits)
			} else {
				d.errorAt(v.Pos, "variants[%d] (%s).defines.SPLITS: %s is out of range: want 1 to %d splits", i, v.Name, val, MaxSplits)
			}
		}
	}
}

// symbolNames lists the symbols an expression may read, for a message:
// the shape's, then the extra ones its key allows (a planned array's i,
// j, nkv and max_nkv), the integer scalars named as such rather than one
// by one.
func symbolNames(extra []string) []string {
	out := slices.Clone(Symbols)
	scalars := abi.ScalarNames()
	anyScalar := false
	for _, x := range extra {
		switch {
		case slices.Contains(scalars, x):
			anyScalar = true
		case !slices.Contains(out, x):
			out = append(out, x)
		}
	}
	if anyScalar {
		out = append(out, "the integer scalars")
	}
	return out
}
