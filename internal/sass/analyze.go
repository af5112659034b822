package sass

// A ChainReport places a function's global loads relative to the start of
// its serial chain: the first warp shuffle (SHFL*) or special-function op
// (MUFU*) of the main loop. In the seed kernels that chain is the dot
// product's xor butterfly followed by the softmax exps; a load placed
// before it overlaps its latency with the whole chain, a load placed after
// it (R4's inline V) waits behind it. The D2 rewrite moved every load of
// the window in front of the first SHFL.BFLY and cut the kernel by ~43%.
type ChainReport struct {
	// Loop is true when a backward branch was found; Start and End are
	// then the offsets of its target and of the branch itself. Without
	// one the whole function is scanned and Start, End span it.
	Loop       bool
	Start, End int
	// Chain is the offset of the first SHFL* or MUFU* in [Start, End], or
	// -1 when there is none.
	Chain int
	// LDG counts the global loads (LDG, LDG.E.64.CONSTANT, ...) in
	// [Start, Chain); LDGSTS counts the asynchronous global-to-shared
	// copies (cp.async) there. Both are 0 when Chain is -1.
	LDG, LDGSTS int
	// LDGTotal and LDGSTSTotal count the same instructions in the whole
	// scanned range, so LDG == LDGTotal means every load of the loop
	// comes before its chain.
	LDGTotal, LDGSTSTotal int
}

// MainLoop returns the offsets [start, end] of f's main loop: the body of
// the first backward branch in listing order, a BRA whose target is lower
// than its own offset. ptxas lays a loop out as its body followed by the
// conditional branch back to its head, so this is the first loop to close:
// the row loop in the seed kernels, whose setup has no loop of its own (a
// kernel with an earlier loop, or a nested one, gets that loop instead).
// The "BRA ." self-branch ptxas pads a function with after EXIT targets
// its own offset and is not a loop. ok is false when f has no backward
// branch.
func MainLoop(f *Function) (start, end int, ok bool) {
	if f == nil {
		return 0, 0, false
	}
	for _, in := range f.Instrs {
		if isOp(in.Op, "BRA") && !in.Never() && in.Target >= 0 && in.Target < in.Offset {
			return in.Target, in.Offset, true
		}
	}
	return 0, 0, false
}

// AnalyzeChain scans f's main loop (MainLoop), or the whole function when
// it has none, for the global loads placed before the first SHFL* or
// MUFU*. Instructions guarded by @!PT never execute and are not counted.
func AnalyzeChain(f *Function) ChainReport {
	r := ChainReport{Chain: -1}
	if f == nil || len(f.Instrs) == 0 {
		return r
	}
	r.Start, r.End, r.Loop = MainLoop(f)
	if !r.Loop {
		r.Start, r.End = f.Instrs[0].Offset, f.Instrs[len(f.Instrs)-1].Offset
	}
	var ldg, ldgsts int
	for _, in := range f.Instrs {
		if in.Offset < r.Start || in.Offset > r.End || in.Never() {
			continue
		}
		if r.Chain < 0 && (isOp(in.Op, "SHFL") || isOp(in.Op, "MUFU")) {
			r.Chain = in.Offset
			r.LDG, r.LDGSTS = ldg, ldgsts
		}
		switch {
		case isOp(in.Op, "LDG"):
			ldg++
		case isOp(in.Op, "LDGSTS"):
			ldgsts++
		}
	}
	r.LDGTotal, r.LDGSTSTotal = ldg, ldgsts
	return r
}

// LoadsBeforeChain is the number of global loads (LDG*, not LDGSTS) that
// f's main loop places before its first SHFL* or MUFU*, or -1 when that
// cannot be determined (no function, or no shuffle or exp in the scanned
// range). cp.async copies are counted apart, by CopiesBeforeChain: they
// land in shared memory, and the values still need a load from there.
func LoadsBeforeChain(f *Function) int {
	r := AnalyzeChain(f)
	if r.Chain < 0 {
		return -1
	}
	return r.LDG
}

// CopiesBeforeChain is LoadsBeforeChain for the asynchronous
// global-to-shared copies (LDGSTS*, cp.async); -1 when undetermined.
func CopiesBeforeChain(f *Function) int {
	r := AnalyzeChain(f)
	if r.Chain < 0 {
		return -1
	}
	return r.LDGSTS
}

// LocalTraffic counts f's local-memory loads (LDL*) and stores (STL*).
// Registers cannot be indexed at run time, so an array indexed by a value
// ptxas cannot unroll lives in the stack frame; a kernel whose accumulator
// is such an array (the seeds' pre-R4 specimen) reads and writes it through
// local memory on every row. Non-zero counts in a kernel that should have
// none are the signature; register spills show up here too.
func LocalTraffic(f *Function) (ldl, stl int) {
	if f == nil {
		return 0, 0
	}
	for _, in := range f.Instrs {
		if in.Never() {
			continue
		}
		switch {
		case isOp(in.Op, "LDL"):
			ldl++
		case isOp(in.Op, "STL"):
			stl++
		}
	}
	return ldl, stl
}
