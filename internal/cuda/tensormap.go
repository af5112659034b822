package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// A TensorMap is an encoded CUtensorMap: the 128 bytes a kernel's
// __grid_constant__ CUtensorMap parameter receives. packArgs stores it
// 64-byte aligned, as cuda.h declares the type.
type TensorMap [128]byte

// TensorMapParams are the arguments of cuTensorMapEncodeTiled, the output
// apart. The enums (DataType, Interleave, Swizzle, L2Promotion, OOBFill)
// are the driver's values, which package abi's tensor-map types hold.
type TensorMapParams struct {
	DataType uint32
	Addr     DevPtr
	// Dims are the global dimensions innermost first (the rank is their
	// number); Strides the byte strides of the rank − 1 outer ones.
	Dims           []uint64
	Strides        []uint64
	Box            []uint32
	ElementStrides []uint32
	Interleave     uint32
	Swizzle        uint32
	L2Promotion    uint32
	OOBFill        uint32
}

// ErrNoTensorMaps is returned by EncodeTensorMapTiled on a driver without
// cuTensorMapEncodeTiled (before CUDA 12.0).
var ErrNoTensorMaps = errors.New("the driver does not encode tensor maps (cuTensorMapEncodeTiled needs CUDA 12.0 or later)")

// EncodeTensorMapTiled encodes a tiled tensor map with the driver. It
// reads no device state: the global address is encoded, never
// dereferenced, and the driver documents no context requirement for it,
// so it is a method of the Driver, not of a Context. The driver checks
// the arguments itself (CUDA_ERROR_INVALID_VALUE); ktune's plan checks
// them first (abi.TensorMap.Eval) so that the user sees which one.
func (d *Driver) EncodeTensorMapTiled(p TensorMapParams) (TensorMap, error) {
	var out TensorMap
	if d.cuTensorMapEncodeTiled == nil {
		return out, ErrNoTensorMaps
	}
	r := len(p.Dims)
	if r < 1 || r > 5 || len(p.Strides) != r-1 || len(p.Box) != r || len(p.ElementStrides) != r {
		return out, fmt.Errorf("cuTensorMapEncodeTiled: rank %d with %d strides, %d box and %d element strides", r, len(p.Strides), len(p.Box), len(p.ElementStrides))
	}
	// The map must be 64-byte aligned: encode into an aligned window of a
	// larger buffer, then copy it out. Every array is plain Go memory
	// without pointers, which C may read for the duration of the call.
	var buf [len(out) + 64]byte
	at := (64 - int(uintptr(unsafe.Pointer(&buf[0]))%64)) % 64
	strides := p.Strides
	if len(strides) == 0 {
		strides = []uint64{0} // rank 1 takes none; pass a valid address all the same
	}
	res := d.cuTensorMapEncodeTiled(unsafe.Pointer(&buf[at]), p.DataType, uint32(r), uint64(p.Addr),
		unsafe.Pointer(&p.Dims[0]), unsafe.Pointer(&strides[0]), unsafe.Pointer(&p.Box[0]), unsafe.Pointer(&p.ElementStrides[0]),
		p.Interleave, p.Swizzle, p.L2Promotion, p.OOBFill)
	if err := d.check("cuTensorMapEncodeTiled", res); err != nil {
		return out, fmt.Errorf("encoding a tensor map (type %d, dims %v, strides %v, box %v): %w", p.DataType, p.Dims, p.Strides, p.Box, err)
	}
	copy(out[:], buf[at:])
	return out, nil
}
