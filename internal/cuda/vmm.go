package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// The driver's virtual-memory API, for one use: device memory whose last
// byte is followed by address space that nothing is mapped at, so that a
// kernel reading a byte past a buffer's end faults (CUDA_ERROR_ILLEGAL_ADDRESS)
// instead of reading a neighbour. cuMemAlloc cannot give that: its
// allocations come from pools, and the bytes after one are another
// allocation or pool slack.

// memAllocationProp is CUmemAllocationProp (cuda.h, 32 bytes): pinned
// device memory on one device, no exportable handle.
type memAllocationProp struct {
	typ         int32 // CU_MEM_ALLOCATION_TYPE_PINNED
	handleTypes int32 // CU_MEM_HANDLE_TYPE_NONE
	locType     int32 // CU_MEM_LOCATION_TYPE_DEVICE
	locID       int32 // the device ordinal
	win32Meta   uintptr
	allocFlags  [8]byte
}

// memAccessDesc is CUmemAccessDesc (12 bytes).
type memAccessDesc struct {
	locType int32
	locID   int32
	flags   int32 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
}

const (
	memAllocationTypePinned = 1
	memLocationTypeDevice   = 1
	memAccessReadWrite      = 3
	memGranularityMinimum   = 0
)

// A Hole is device memory of a given size whose end is followed by at
// least one page of unmapped address space. Ptr is its first byte; Release
// frees it.
type Hole struct {
	c *Context
	// Ptr is the first byte of the buffer: Ptr+size is the first unmapped
	// byte.
	Ptr      DevPtr
	base     DevPtr // the reservation
	reserved int64  // bytes reserved: mapped plus one granule
	mapped   int64
	handle   uint64
	state    int // 1 created, 2 reserved, 3 mapped
}

// AllocBeforeHole allocates bytes of device memory that end where one
// granule of unmapped address space begins: it reserves the mapped size
// (bytes rounded up to the allocation granularity) plus one granule, maps
// physical memory at the start of the reservation only, grants read and
// write access to what is mapped, and places the buffer at the end of the
// mapped part. Any read or write past its end hits the unmapped granule.
func (c *Context) AllocBeforeHole(bytes int64) (*Hole, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("allocating before a hole: size %d must be positive", bytes)
	}
	prop := memAllocationProp{typ: memAllocationTypePinned, locType: memLocationTypeDevice, locID: c.dev.dev}
	var gran uintptr
	if err := c.call("cuMemGetAllocationGranularity", func() int32 {
		return c.d.cuMemGetAllocationGranularity(&gran, unsafe.Pointer(&prop), memGranularityMinimum)
	}); err != nil {
		return nil, fmt.Errorf("reading the allocation granularity: %w", err)
	}
	g := int64(gran)
	h := &Hole{c: c, mapped: (bytes + g - 1) / g * g}
	h.reserved = h.mapped + g
	if err := c.call("cuMemCreate", func() int32 {
		return c.d.cuMemCreate(&h.handle, uintptr(h.mapped), unsafe.Pointer(&prop), 0)
	}); err != nil {
		return nil, fmt.Errorf("creating %d bytes of physical memory: %w", h.mapped, err)
	}
	h.state = 1
	var base uint64
	if err := c.call("cuMemAddressReserve", func() int32 {
		return c.d.cuMemAddressReserve(&base, uintptr(h.reserved), uintptr(g), 0, 0)
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("reserving %d bytes of address space: %w", h.reserved, err), h.Release())
	}
	h.base, h.state = DevPtr(base), 2
	if err := c.call("cuMemMap", func() int32 { return c.d.cuMemMap(base, uintptr(h.mapped), 0, h.handle, 0) }); err != nil {
		return nil, errors.Join(fmt.Errorf("mapping %d bytes: %w", h.mapped, err), h.Release())
	}
	h.state = 3
	desc := memAccessDesc{locType: memLocationTypeDevice, locID: c.dev.dev, flags: memAccessReadWrite}
	if err := c.call("cuMemSetAccess", func() int32 {
		return c.d.cuMemSetAccess(base, uintptr(h.mapped), unsafe.Pointer(&desc), 1)
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("granting access to %d mapped bytes: %w", h.mapped, err), h.Release())
	}
	h.Ptr = h.base + DevPtr(h.mapped-bytes)
	return h, nil
}

// Release unmaps and frees what AllocBeforeHole made, in reverse order;
// calling it again does nothing.
func (h *Hole) Release() error {
	c := h.c
	var errs []error
	if h.state >= 3 {
		if err := c.call("cuMemUnmap", func() int32 { return c.d.cuMemUnmap(uint64(h.base), uintptr(h.mapped)) }); err != nil {
			errs = append(errs, fmt.Errorf("unmapping: %w", err))
		}
	}
	if h.state >= 2 {
		if err := c.call("cuMemAddressFree", func() int32 { return c.d.cuMemAddressFree(uint64(h.base), uintptr(h.reserved)) }); err != nil {
			errs = append(errs, fmt.Errorf("freeing the address reservation: %w", err))
		}
	}
	if h.state >= 1 {
		if err := c.call("cuMemRelease", func() int32 { return c.d.cuMemRelease(h.handle) }); err != nil {
			errs = append(errs, fmt.Errorf("releasing the physical memory: %w", err))
		}
	}
	h.state = 0
	return errors.Join(errs...)
}

// CopyDtoDAsync enqueues a copy of n bytes from src to dst on s.
func (c *Context) CopyDtoDAsync(dst, src DevPtr, n int64, s *Stream) error {
	if err := c.call("cuMemcpyDtoDAsync", func() int32 {
		return c.d.cuMemcpyDtoDAsync(uint64(dst), uint64(src), uintptr(n), s.handle())
	}); err != nil {
		return fmt.Errorf("copying %d bytes on the device: %w", n, err)
	}
	return nil
}
