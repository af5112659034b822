package probe

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/expr"
)

// marshal turns a launch's declared arguments into the values of its
// kernel-params array (cuda.ArgBytes gives each one's bytes): buffers as
// device pointers into the workspace, the shape's scalars, constants and
// integer expressions at their declared C types, and a struct or a vector
// as the bytes of its C layout (abi.Encode). What each name means is the
// ABI's table (package abi); this is where it meets the allocations of the
// workspace. A tensor map is encoded over its buffer's device pointer by
// enc (the device's encodeTensorMap). nkv, when above 0, is the step's
// length that the arguments of a kernel launched fresh every step may read
// (plan.Geometry.Args).
func marshal(args []abi.Arg, s abi.Shape, defines abi.Defines, nkv int, w *workspace, enc tensorMapEncoder) ([]any, error) {
	d := w.l.dims(s)
	env := d.Env(defines)
	if nkv > 0 {
		env["nkv"] = int64(nkv)
	}
	var leaf func(a abi.Arg) (any, error)
	leaf = func(a abi.Arg) (any, error) {
		switch {
		case a.TensorMap != nil:
			return tensorMapArg(a.TensorMap, env, s, leaf, enc)
		case a.IsBuffer() && a.Name == "":
			return cuda.DevPtr(0), nil // null
		case a.IsScratch():
			return scratchArg(a.Name, d, w)
		case a.IsPlanned():
			return plannedArg(a.Name, d, w)
		case a.IsBuffer():
			return bufferArg(a.Name, d, w)
		case a.Name == "":
			return abi.ExprValue(a, env)
		}
		return abi.ScalarValue(a, d)
	}
	out := make([]any, len(args))
	for i, a := range args {
		var err error
		if a.Struct != nil || a.Elems != nil {
			out[i], err = abi.Encode(a, func(a abi.Arg) (any, error) {
				v, err := leaf(a)
				switch x := v.(type) {
				case cuda.DevPtr:
					return uint64(x), err
				case cuda.TensorMap:
					return x[:], err
				}
				return v, err
			})
		} else {
			out[i], err = leaf(a)
		}
		if err != nil {
			return nil, fmt.Errorf("argument %d (%s): %w", i, a, err)
		}
	}
	return out, nil
}

// dims is what the ABI's scalars read at shape s: the layout's SPLITS and
// io, and the SM count its expressions read.
func (l layout) dims(s abi.Shape) abi.Dims {
	return abi.Dims{Shape: s, Splits: l.splits, IO: l.io(), WorkspaceBytes: l.workspaceBytes, Scratch: abi.ParseScratchText(l.scratch),
		PageSize: l.pageSize, Planned: abi.ParsePlannedText(l.planned), SMs: l.sms}
}

// io is the io the layout was sized for.
func (l layout) io() abi.IO {
	io := abi.IO{Q: l.qDtype, Out: l.outDtype, KVLayout: l.kvLayout, Paging: l.paging, Mask: l.mask, SplitCounts: l.splitCounts}
	if l.partialABI {
		io.Partial = abi.PartialABI
	} else if io != (abi.IO{}) {
		io.Partial = abi.PartialOpaque
	}
	return io.OrABI()
}

// bufferArg is the device pointer a buffer argument passes: its
// allocation's, at the buffer's offset in it.
func bufferArg(name string, d abi.Dims, w *workspace) (cuda.DevPtr, error) {
	b := abi.BufferNamed(name)
	if b == nil {
		return 0, fmt.Errorf("unknown buffer %q", name)
	}
	p := w.allocPtr(b.Alloc)
	if p == 0 {
		return 0, fmt.Errorf("buffer %s is not allocated for this point", name)
	}
	return p + devOff(b.At(d)), nil
}

// allocPtr is the device pointer of an allocation of the ABI's table: the
// workspace's buffer of the same name (workspace.table), 0 when it is not
// allocated.
func (w *workspace) allocPtr(a abi.AllocID) cuda.DevPtr {
	for _, e := range w.table() {
		if e.name == abi.Allocs[a].Name {
			return *e.p
		}
	}
	return 0
}

// scratchArg is the device pointer of a named scratch buffer: in the
// workspace allocation, after io.workspace's bytes.
func scratchArg(name string, d abi.Dims, w *workspace) (cuda.DevPtr, error) {
	offsets := map[string]int64{}
	for _, sp := range d.ScratchSpans() {
		offsets[sp.Name] = sp.Offset
	}
	return spanArg("scratch", "the workspace", name, offsets, w.workspace)
}

// spanArg is the device pointer of the named buffer of a kind that lives
// at an offset in one allocation (base; 0: not allocated), as offsets
// lays them out.
func spanArg(kind, alloc, name string, offsets map[string]int64, base cuda.DevPtr) (cuda.DevPtr, error) {
	off, ok := offsets[name]
	switch {
	case !ok:
		return 0, fmt.Errorf("%s %s is not declared for this point", kind, name)
	case base == 0:
		return 0, fmt.Errorf("%s %s: %s is not allocated for this point", kind, name, alloc)
	}
	return base + devOff(off), nil
}

// A tensorMapEncoder encodes a CUtensorMap (device.encodeTensorMap).
type tensorMapEncoder func(cuda.TensorMapParams) (cuda.TensorMap, error)

// tensorMapArg evaluates a tensor map at the point and encodes it over its
// buffer's device pointer. The plan has checked the values already
// (plan/tensormap.go); the address's alignment is known only here.
func tensorMapArg(m *abi.TensorMap, env expr.Env, s abi.Shape, leaf func(abi.Arg) (any, error), enc tensorMapEncoder) (cuda.TensorMap, error) {
	v, err := m.Eval(env, s.KVDtype)
	if err != nil {
		return cuda.TensorMap{}, err
	}
	p, err := leaf(m.Buffer)
	if err != nil {
		return cuda.TensorMap{}, err
	}
	addr, _ := p.(cuda.DevPtr)
	if addr == 0 || uint64(addr)%v.AddrAlign() != 0 {
		return cuda.TensorMap{}, fmt.Errorf("tensor map over %s: address %#x is not %d-byte aligned", m.Buffer, uint64(addr), v.AddrAlign())
	}
	if enc == nil {
		return cuda.TensorMap{}, fmt.Errorf("tensor map over %s: no encoder on this device", m.Buffer)
	}
	return enc(cuda.TensorMapParams{DataType: uint32(v.Dtype), Addr: addr, Dims: v.Dims, Strides: v.Strides, Box: v.Box,
		ElementStrides: v.ElementStrides, Interleave: uint32(v.Interleave), Swizzle: uint32(v.Swizzle),
		L2Promotion: uint32(v.L2Promotion), OOBFill: uint32(v.OOBFill)})
}

// plannedArg is the device pointer of a host-planned array, in the planned
// allocation (abi.PlannedSpans).
func plannedArg(name string, d abi.Dims, w *workspace) (cuda.DevPtr, error) {
	offsets := map[string]int64{}
	for _, sp := range d.PlannedSpans() {
		offsets[sp.Name] = sp.Offset
	}
	return spanArg("planned", "the planned arrays' allocation", name, offsets, w.planned)
}
