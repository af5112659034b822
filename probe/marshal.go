package probe

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
)

// marshal turns a launch's declared arguments into the values of its
// kernel-params array (cuda.ArgBytes gives each one's bytes): buffers as
// device pointers into the workspace, the shape's scalars, constants and
// integer expressions at their declared C types, and a struct or a vector
// as the bytes of its C layout (abi.Encode). What each name means is the
// ABI's table (package abi); this is where it meets the allocations of the
// workspace.
func marshal(args []abi.Arg, s abi.Shape, defines abi.Defines, w *workspace) ([]any, error) {
	d := w.l.dims(s)
	env := d.Env(defines)
	leaf := func(a abi.Arg) (any, error) {
		switch {
		case a.IsBuffer() && a.Name == "":
			return cuda.DevPtr(0), nil // null
		case a.IsScratch():
			return scratchArg(a.Name, d, w)
		case a.IsBuffer():
			return bufferArg(a.Name, s, w)
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
				if p, ok := v.(cuda.DevPtr); ok {
					return uint64(p), err
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
// io.
func (l layout) dims(s abi.Shape) abi.Dims {
	return abi.Dims{Shape: s, Splits: l.splits, IO: abi.IO{Q: l.qDtype, Out: l.outDtype, KVLayout: l.kvLayout}.OrABI(),
		WorkspaceBytes: l.workspaceBytes, Scratch: abi.ParseScratchText(l.scratch)}
}

// bufferArg is the device pointer a buffer argument passes: its
// allocation's, at the buffer's offset in it.
func bufferArg(name string, s abi.Shape, w *workspace) (cuda.DevPtr, error) {
	b := abi.BufferNamed(name)
	if b == nil {
		return 0, fmt.Errorf("unknown buffer %q", name)
	}
	p := w.allocPtr(b.Alloc)
	if p == 0 {
		return 0, fmt.Errorf("buffer %s is not allocated for this point", name)
	}
	return p + devOff(b.At(s)), nil
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
	for _, sp := range d.ScratchSpans() {
		if sp.Name == name {
			if w.workspace == 0 {
				return 0, fmt.Errorf("scratch %s: the workspace is not allocated for this point", name)
			}
			return w.workspace + devOff(sp.Offset), nil
		}
	}
	return 0, fmt.Errorf("scratch %s is not declared for this point", name)
}
