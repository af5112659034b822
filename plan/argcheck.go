package plan

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/spec"
)

// runnable refuses, at the variant's place in the spec, a point whose
// launches no GPU can run as declared: an argument whose value at the
// point does not fit its C type (an expression that overflows, divides by
// zero, or goes negative into an unsigned type), a launch passing more
// parameter bytes than the architecture takes (abi.ParamLimit), a split
// count below 1 at a length the point runs, and split_x pages whose x does
// not divide head_dim. Each would otherwise fail on the device, after
// compiling, as the point's error.
func (b *builder) runnable(v *spec.Variant, sh *spec.Shape, defs map[string]string, pt *Point) error {
	nkv := pt.Config.NKV
	d := pt.Dims()
	env := d.Env(pt.Config.Defines)
	limit := abi.ParamLimit(b.arch)
	for li, l := range pt.Launches {
		prefix := launchPrefix(v, li)
		at := v
		if li < len(v.Launches) {
			// A declared launch's own line, not the variant's.
			at = &spec.Variant{Name: v.Name, Pos: v.Launches[li].Pos}
		}
		slots, err := abi.ParamSlots(l.Args)
		if err != nil {
			return b.pointErrorf(v, sh, defs, nkv, "%sargs: %w", prefix, err)
		}
		if n := len(slots); n > 0 {
			if end := slots[n-1].Offset + slots[n-1].Size; end > limit {
				return b.pointErrorf(at, sh, defs, nkv, "%sargs: %d bytes of parameters, and a launch on %s passes at most %d", prefix, end, b.arch, limit)
			}
		}
		for _, n := range argLengths(pt) {
			if pt.Geometry != nil && pt.Geometry.Args {
				env[spec.NKV] = int64(n)
			}
			for ai, arg := range l.Args {
				for _, a := range arg.Leaves() {
					if err := argFits(a, d, env); err != nil {
						where := ""
						if n != nkv {
							where = fmt.Sprintf(" at nkv %d (a length the gates launch it at)", n)
						}
						return b.pointErrorf(at, sh, defs, nkv, "%sargs[%d]: %s%s: %w", prefix, ai, a, where, err)
					}
				}
			}
		}
	}
	if pt.Geometry != nil && len(pt.Geometry.Steps) > 0 {
		for _, n := range argLengths(pt) {
			if _, err := pt.Geometry.StepsAt(n, pt.Launches); err != nil {
				return b.pointErrorf(v, sh, defs, nkv, "at nkv %d (a length the gates launch it at): %w", n, err)
			}
		}
	}
	if err := splitCountsFit(pt, d); err != nil {
		return b.pointErrorf(v, sh, defs, nkv, "%w", err)
	}
	io := pt.IO.OrABI()
	if io.KVLayout == abi.Paged && io.Paging.Order == abi.PageSplitX {
		pl := io.Placement(pt.Config.Shape, false, nil)
		if x := pl.X(); pl.Width%x != 0 {
			return b.pointErrorf(v, sh, defs, nkv, "io.page_order split_x: x is %d elements of %s (16 bytes), which does not divide head_dim %d",
				x, pt.Config.Shape.KVDtype, pl.Width)
		}
	}
	return nil
}

// argLengths are the lengths a point's launches are evaluated at: its own
// nkv and, when its arguments read nkv, every length the gates launch it
// at and the capacity.
func argLengths(pt *Point) []int {
	if pt.Geometry == nil || (!pt.Geometry.Args && len(pt.Geometry.Steps) == 0) {
		return []int{pt.Config.NKV}
	}
	return sortedLengths(launchLengths(pt), pt.Config.Shape.Capacity)
}

// launchLengths are the lengths a point's step is launched at: one row, its
// nkv, the capacity, the replay gate's capture and replays and the gate
// lengths.
func launchLengths(pt *Point) []int {
	out := []int{1, pt.Config.NKV, pt.Config.Shape.Capacity, pt.CaptureNKV}
	return append(append(out, pt.GateNKV...), pt.ReplayNKV...)
}

// sortedLengths is lengths in [1, capacity], ascending, without repeats.
func sortedLengths(lengths []int, capacity int) []int {
	lengths = slices.DeleteFunc(lengths, func(n int) bool { return n < 1 || n > capacity })
	slices.Sort(lengths)
	return slices.Compact(lengths)
}

// argFits evaluates one leaf argument at d, as the launch will: a
// constant or an expression at its declared type, a scalar of the
// table at its own.
func argFits(a abi.Arg, d abi.Dims, env expr.Env) error {
	switch {
	case a.IsBuffer(), a.TensorMap != nil, a.IsScratch(), a.IsPlanned():
		return nil
	case a.Name == "":
		_, err := abi.ExprValue(a, env)
		return err
	}
	_, err := abi.ScalarValue(a, d)
	return err
}

// splitCountsFit evaluates io.split_counts as the probe does
// (abi.SplitCountBytes) at every length a sequence of the point has: its
// nkv, its gates' and replays' lengths, half of each (a ragged batch's
// shortest sequences), one and the capacity.
func splitCountsFit(pt *Point, d abi.Dims) error {
	if pt.IO.SplitCounts == "" {
		return nil
	}
	lengths := launchLengths(pt)
	for _, n := range slices.Clone(lengths) {
		lengths = append(lengths, n/2)
	}
	_, err := abi.SplitCountBytes(d, pt.Config.Defines, sortedLengths(lengths, pt.Config.Shape.Capacity))
	return err
}
