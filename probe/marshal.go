package probe

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
)

// marshal turns a launch's declared arguments into the values of its
// kernel-params array (cuda.ArgBytes gives each one's bytes): buffers as
// device pointers into the workspace, the shape's scalars and constants
// at their declared C types. The vocabulary is spec's (signature.go);
// what each name means is here, next to the buffers it points into.
func marshal(args []spec.Arg, s results.Shape, w *workspace) ([]any, error) {
	out := make([]any, len(args))
	for i, a := range args {
		var err error
		if a.IsBuffer() {
			out[i], err = bufferArg(a.Name, s, w)
		} else {
			out[i], err = scalarArg(a, s, w.l)
		}
		if err != nil {
			return nil, fmt.Errorf("argument %d (%s): %w", i, a, err)
		}
	}
	return out, nil
}

// bufferArg is the device pointer a buffer argument passes.
func bufferArg(name string, s results.Shape, w *workspace) (cuda.DevPtr, error) {
	var p cuda.DevPtr
	switch name {
	case "q":
		p = w.q
	case "k":
		p = w.k
	case "v":
		p = w.v
	case "out":
		p = w.out
	case "partial":
		p = w.partial
	case "workspace":
		p = w.workspace
	case "positions":
		p = w.positions
	case "seqlens":
		// The lengths follow the positions in one buffer (positionBytes),
		// so that one copy sets both before every run.
		p = w.positions + devOff(4*int64(s.Batch))
	case "lse":
		p = w.lse
	case "counters":
		p = w.scratch
	case "kv_scale", "k_scale":
		p = w.kvScale // K's scales come first
	case "v_scale":
		if w.kvScale != 0 {
			p = w.kvScale + devOff(4*int64(s.KVHeads))
		}
	default:
		return 0, fmt.Errorf("unknown buffer %q", name)
	}
	if p == 0 {
		return 0, fmt.Errorf("buffer %s is not allocated for this point", name)
	}
	return p, nil
}

// scalarValue is the value of a shape scalar, in elements for strides.
func scalarValue(name string, s results.Shape, l layout) (float64, error) {
	d, kvh, c := int64(s.HeadDim), int64(s.KVHeads), int64(s.Capacity)
	row, head := kvh*d, d // [batch][capacity][kv_heads][dim]
	if l.kvLayout == spec.KVBHSD {
		row, head = d, c*d // [batch][kv_heads][capacity][dim]
	}
	switch name {
	case "heads":
		return float64(s.Heads), nil
	case "kv_heads":
		return float64(s.KVHeads), nil
	case "head_dim":
		return float64(s.HeadDim), nil
	case "capacity":
		return float64(s.Capacity), nil
	case "batch":
		return float64(s.Batch), nil
	case "group":
		return float64(s.Heads / s.KVHeads), nil
	case "splits":
		return float64(l.splits), nil
	case "kv_row_stride":
		return float64(row), nil
	case "kv_head_stride":
		return float64(head), nil
	case "kv_batch_stride":
		return float64(c * kvh * d), nil
	case "pstr":
		return float64(l.pstr), nil
	case "scale":
		return 1 / math.Sqrt(float64(s.HeadDim)), nil
	}
	return 0, fmt.Errorf("unknown scalar %q", name)
}

// scalarArg is a scalar or constant argument at its declared type.
func scalarArg(a spec.Arg, s results.Shape, l layout) (any, error) {
	if a.Name == "" {
		return constArg(a)
	}
	x, err := scalarValue(a.Name, s, l)
	if err != nil {
		return nil, err
	}
	return typed(a.Type, x)
}

// typed converts a value to the Go type cuda.Launch marshals as the
// declared C type, refusing one that does not fit.
func typed(t spec.ArgType, x float64) (any, error) {
	fits := func(lo, hi float64) error {
		if x < lo || x > hi || x != math.Trunc(x) {
			return fmt.Errorf("%v does not fit %s", x, t)
		}
		return nil
	}
	switch t {
	case spec.ArgF32:
		return float32(x), nil
	case spec.ArgI32:
		return int32(x), fits(math.MinInt32, math.MaxInt32)
	case spec.ArgU32:
		return uint32(x), fits(0, math.MaxUint32)
	case spec.ArgI64:
		return int64(x), fits(-(1 << 53), 1<<53)
	case spec.ArgU64:
		return uint64(x), fits(0, 1<<53)
	}
	return nil, fmt.Errorf("type %s is not a scalar type", t)
}

// constArg parses a constant's literal at its type.
func constArg(a spec.Arg) (any, error) {
	switch a.Type {
	case spec.ArgF32:
		f, err := strconv.ParseFloat(a.Value, 32)
		return float32(f), err
	case spec.ArgI32:
		n, err := strconv.ParseInt(a.Value, 0, 32)
		return int32(n), err
	case spec.ArgU32:
		n, err := strconv.ParseUint(a.Value, 0, 32)
		return uint32(n), err
	case spec.ArgI64:
		n, err := strconv.ParseInt(a.Value, 0, 64)
		return n, err
	case spec.ArgU64:
		n, err := strconv.ParseUint(a.Value, 0, 64)
		return n, err
	}
	return nil, fmt.Errorf("constant of type %s", a.Type)
}
