package probe

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cubin"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/plan"
)

// The parameter check without a GPU: every launch's declared arguments,
// laid out as the compiler lays out parameters (abi.ParamSlots), against
// the kernel's own parameters as the CUBIN records them (cubin.Param,
// EIATTR_KPARAM_INFO) — the very comparison the probe makes with
// cuFuncGetParamInfo before a sweep's first launch, made by ktune check
// on a machine with a compiler and no device. A launch one argument
// short, a kernel without the ABI's float scale or a by-value struct of
// another size then fails the check, at the launch's place in the spec.

// A declaredLaunch is one launch's arguments for an entry, where the spec
// declares them.
type declaredLaunch struct {
	entry, where string
	args         []abi.Arg
	// pointees are what each argument holds at the point (abi.PointeeOf),
	// for a C++ kernel whose symbol gives its parameters' types.
	pointees []abi.Pointee
}

// declare records the declared arguments of p's launches that run k's
// entries, each distinct declaration once.
func (k *KernelCheck) declare(set CheckSet, p *plan.Point) {
	names := entryPoints(k.src)
	for li, l := range p.Launches {
		if !slices.Contains(names, l.Entry) {
			continue
		}
		where := fmt.Sprintf("launch %d of variant %s", li, p.Config.Variant)
		if set.Where != nil {
			where = set.Where(p, li)
		}
		d := declaredLaunch{entry: l.Entry, where: where, args: l.Args}
		kv := 0 // K and V unjudged for a point without a K/V type (one built by hand)
		if p.Config.Shape.KVDtype != "" {
			kv = p.Config.Shape.KVType().Bytes
		}
		for _, a := range l.Args {
			d.pointees = append(d.pointees, abi.PointeeOf(a, p.IO, p.Planned, kv))
		}
		if l.BlocksPerSM != 0 {
			k.assume(assumedOccupancy{entry: l.Entry, where: where, threads: threads(l.Block), shared: l.Shared,
				blocksPerSM: l.BlocksPerSM, declared: l.BlocksPerSMDeclared})
		}
		if !slices.ContainsFunc(k.declared, func(o declaredLaunch) bool {
			return o.entry == d.entry && o.where == d.where && slices.EqualFunc(o.args, d.args, func(a, b abi.Arg) bool { return a.String() == b.String() })
		}) {
			k.declared = append(k.declared, d)
		}
	}
}

// checkParams compares the declarations of entry e with fn's parameters
// and fails the kernel, at each declaration's place, for the first
// parameter that differs.
func (k *KernelCheck) checkParams(e *EntryCheck, fn *cubin.Function) {
	if !fn.ParamsKnown {
		k.Notes = append(k.Notes, fmt.Sprintf("%s: parameters not checked: the image records none", e.Entry))
		return
	}
	e.Params = ParamSlots(fn)
	for _, d := range k.declared {
		if d.entry != e.Entry {
			continue
		}
		if err := abi.CheckParams(e.Entry, d.args, e.Params); err != nil {
			k.fail("%s: %v", d.where, err)
			continue
		}
		k.checkPointees(e.Entry, d, cubin.ParamTypes(fn.Name))
	}
}

// checkPointees compares what each pointer argument of a launch holds
// with what the kernel's parameter of that place points at, where the
// mangled symbol names its type: the sizes agree, an int32 table is not
// passed where an int64 or bool one is read (FlashInfer's IdType and
// block_valid_mask), f16 data not where floats are (a float or half
// pointer reads one number an element; an integer or vector type may
// pack several). An extern "C" kernel
// (no types in its symbol) and a class, void or char pointee (a byte
// address, llama.cpp's) are not judged.
func (k *KernelCheck) checkPointees(entry string, d declaredLaunch, types []string) {
	if len(types) != len(d.args) {
		return
	}
	for i, t := range types {
		n, scalar := cubin.Pointee(t)
		if !d.pointees[i].Holds(n, scalar) {
			k.fail("%s: %s: parameter %d (%s) points to %d-byte elements, but %s passed there holds %d-byte ones",
				d.where, entry, i, t, n, d.args[i], d.pointees[i].Bytes)
		}
	}
}

// ParamSlots are a CUBIN function's parameters as abi compares them.
func ParamSlots(fn *cubin.Function) []abi.ParamSlot {
	out := make([]abi.ParamSlot, len(fn.Params))
	for i, p := range fn.Params {
		out[i] = abi.ParamSlot{Offset: p.Offset, Size: p.Size}
	}
	return out
}

// CheckPrebuilt is the part of Check that needs no compiler: the
// prebuilt CUBINs (and fatbins holding an uncompressed one) of the sets'
// points, each read for the entries its launches name and their
// parameters. It returns what fails, each problem placed where the spec
// declares the launch, for ktune plan; a PTX (its parameters are the
// driver's JIT's) and a file not built yet are passed over.
func CheckPrebuilt(sets []CheckSet) []string {
	var out []string
	for _, k := range checkJobs(sets, "", "") {
		if k.Artifact == "" || k.src.Missing != "" || cuda.Kind(k.src.Artifact) == cuda.ImagePTX {
			continue
		}
		image := k.src.Artifact
		if at := bytes.Index(image, []byte("\x7fELF")); at > 0 && cuda.Kind(image) == cuda.ImageFatbin {
			image = image[at:]
		}
		img, err := cubin.Parse(image)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", k.Source, err))
			continue
		}
		for i := range k.Entries {
			e := &k.Entries[i]
			sym := symbolOf(k.src, nil, e.Entry)
			fn := img.Functions[sym]
			if fn == nil || !fn.Entry {
				k.fail("%s: the image has no entry %s (it has %s)", k.Source, sym, listOrNone(img.Entries()))
				continue
			}
			k.checkParams(e, fn)
		}
		out = append(out, k.Problems...)
	}
	return out
}
