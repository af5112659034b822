package cuda

import (
	"fmt"
	"syscall"
	"unsafe"
)

// An offHeap is a bump allocator over an anonymous mapping outside the Go
// heap. The driver and NVRTC take arrays of pointers (void** kernelParams,
// const char* const* options); Go's pointer-passing rules forbid such arrays
// in Go memory, and memory the garbage collector never sees can hold raw
// addresses freely.
type offHeap struct {
	mem  []byte
	used int
}

func newOffHeap(size int) (*offHeap, error) {
	if size <= 0 {
		size = 1
	}
	page := syscall.Getpagesize()
	size = (size + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes outside the Go heap: %w", size, err)
	}
	return &offHeap{mem: mem}, nil
}

// free unmaps the memory; addresses handed out before are invalid afterwards.
func (a *offHeap) free() error {
	if a == nil || a.mem == nil {
		return nil
	}
	err := syscall.Munmap(a.mem)
	a.mem = nil
	return err
}

// base is the address of the first byte.
func (a *offHeap) base() uintptr { return offHeapAddr(a.mem) }

// offHeapAddr is the address of b's first byte. Only memory the garbage
// collector does not manage may be handed to C as a bare address.
func offHeapAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// alloc reserves n bytes aligned to align (a power of two) and returns
// their offset; it panics on overflow, since every caller sizes the mapping
// from the same inputs first.
func (a *offHeap) alloc(n, align int) int {
	off := (a.used + align - 1) &^ (align - 1)
	if off+n > len(a.mem) {
		panic(fmt.Sprintf("cuda: off-heap buffer of %d bytes overflowed (need %d)", len(a.mem), off+n))
	}
	a.used = off + n
	return off
}

// cstring copies s with a terminating NUL and returns its address.
func (a *offHeap) cstring(s string) uintptr {
	off := a.alloc(len(s)+1, 1)
	copy(a.mem[off:], s)
	a.mem[off+len(s)] = 0
	return a.base() + uintptr(off)
}

// ptrArray stores addrs as a C array of pointers and returns its address.
func (a *offHeap) ptrArray(addrs []uintptr) uintptr {
	if len(addrs) == 0 {
		return 0
	}
	off := a.alloc(8*len(addrs), 8)
	for i, p := range addrs {
		putU64(a.mem[off+8*i:], uint64(p))
	}
	return a.base() + uintptr(off)
}

// cstringsSize is the room cstrings(ss) plus their pointer array needs.
func cstringsSize(ss ...[]string) int {
	n := 0
	for _, s := range ss {
		for _, x := range s {
			n += len(x) + 1
		}
		n += 8*len(s) + 8 // array plus alignment slack
	}
	return n
}

// putU64 stores v little-endian, the byte order of every host CUDA supports.
func putU64(b []byte, v uint64) {
	_ = b[7]
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func putU32(b []byte, v uint32) {
	_ = b[3]
	for i := range 4 {
		b[i] = byte(v >> (8 * i))
	}
}
