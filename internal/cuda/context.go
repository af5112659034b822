package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A Context is a device's primary context, retained by NewContext and
// released by Close. Its methods may be called from any goroutine (see the
// package documentation).
type Context struct {
	d   *Driver
	dev Device
	h   uintptr // CUcontext

	// argMu guards args, the off-heap page each Launch packs its kernel
	// arguments into; the driver copies them during cuLaunchKernel, so one
	// page serves every launch.
	argMu  sync.Mutex
	args   *offHeap
	closed atomic.Bool
}

// NewContext retains the device's primary context. Close releases it; the
// driver destroys the primary context, and with it every allocation, module
// and stream made in it, when its last holder releases it.
func (dev Device) NewContext() (*Context, error) {
	var h uintptr
	err := dev.d.check("cuDevicePrimaryCtxRetain", dev.d.cuDevicePrimaryCtxRetain(&h, dev.dev))
	onSignalStack() // a context's start may install handlers too
	if err != nil {
		return nil, fmt.Errorf("retaining the primary context of device %d: %w", dev.dev, err)
	}
	args, err := newOffHeap(argBufSize + launchConfigSize)
	if err != nil {
		dev.d.cuDevicePrimaryCtxRelease(dev.dev)
		return nil, err
	}
	return &Context{d: dev.d, dev: dev, h: h, args: args}, nil
}

// Device returns the device the context belongs to.
func (c *Context) Device() Device { return c.dev }

// enter locks the goroutine to its OS thread and makes c current there; the
// caller must call exit afterwards.
func (c *Context) enter(what string) error {
	runtime.LockOSThread()
	if c.closed.Load() {
		runtime.UnlockOSThread()
		return fmt.Errorf("%s: context is closed", what)
	}
	if err := c.d.check("cuCtxSetCurrent", c.d.cuCtxSetCurrent(c.h)); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (c *Context) exit() { runtime.UnlockOSThread() }

// call runs one driver call with c current and wraps its result.
func (c *Context) call(name string, f func() int32) error {
	if err := c.enter(name); err != nil {
		return err
	}
	defer c.exit()
	return c.d.check(name, f())
}

// Close releases the primary context. Calling it again does nothing.
func (c *Context) Close() error {
	c.argMu.Lock()
	defer c.argMu.Unlock()
	if c.closed.Swap(true) {
		return nil
	}
	err := c.d.check("cuDevicePrimaryCtxRelease", c.d.cuDevicePrimaryCtxRelease(c.dev.dev))
	if ferr := c.args.free(); err == nil && ferr != nil {
		err = fmt.Errorf("unmapping the kernel argument buffer: %w", ferr)
	}
	return err
}

// Synchronize waits until all work in the context has finished and returns
// the first asynchronous error, if any (a kernel fault shows up here).
func (c *Context) Synchronize() error {
	return c.call("cuCtxSynchronize", c.d.cuCtxSynchronize)
}

// MemInfo reports the free and total device memory in bytes.
func (c *Context) MemInfo() (free, total int64, err error) {
	var f, t uintptr
	err = c.call("cuMemGetInfo", func() int32 { return c.d.cuMemGetInfo(&f, &t) })
	return int64(f), int64(t), err
}

// A DevPtr is a device address (CUdeviceptr).
type DevPtr uint64

// Alloc allocates bytes of device memory, aligned to at least 256 bytes.
func (c *Context) Alloc(bytes int64) (DevPtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuMemAlloc: size %d must be positive", bytes)
	}
	var p uint64
	if err := c.call("cuMemAlloc", func() int32 { return c.d.cuMemAlloc(&p, uintptr(bytes)) }); err != nil {
		return 0, fmt.Errorf("allocating %d bytes on the device: %w", bytes, err)
	}
	return DevPtr(p), nil
}

// Free frees memory from Alloc.
func (c *Context) Free(p DevPtr) error {
	return c.call("cuMemFree", func() int32 { return c.d.cuMemFree(uint64(p)) })
}

// CopyHtoD copies src to device address dst and waits until the data is on
// the device. The wait matters: from pageable memory cuMemcpyHtoD returns
// once the data is staged, and a kernel on a non-blocking Stream could read
// dst before the DMA lands. Like CopyDtoH it runs on the legacy default
// stream and does not wait for work queued on streams from NewStream.
func (c *Context) CopyHtoD(dst DevPtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := c.enter("cuMemcpyHtoD"); err != nil {
		return err
	}
	defer c.exit()
	err := c.d.check("cuMemcpyHtoD", c.d.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(unsafe.SliceData(src)), uintptr(len(src))))
	runtime.KeepAlive(src)
	if err != nil {
		return fmt.Errorf("copying %d bytes to the device: %w", len(src), err)
	}
	return c.d.check("cuStreamSynchronize", c.d.cuStreamSynchronize(0))
}

// CopyDtoH copies len(dst) bytes from device address src into dst and waits
// for the copy. It runs on the legacy default stream, after the work queued
// there, but not after work on streams from NewStream (they do not block on
// the default stream): synchronize those first.
func (c *Context) CopyDtoH(dst []byte, src DevPtr) error {
	if len(dst) == 0 {
		return nil
	}
	err := c.call("cuMemcpyDtoH", func() int32 {
		return c.d.cuMemcpyDtoH(unsafe.Pointer(unsafe.SliceData(dst)), uint64(src), uintptr(len(dst)))
	})
	runtime.KeepAlive(dst)
	return err
}

// MemsetD32Async fills count 32-bit words at p with value, in stream order
// on s (nil: the default stream). It may be captured into a graph.
func (c *Context) MemsetD32Async(p DevPtr, value uint32, count int64, s *Stream) error {
	return c.call("cuMemsetD32Async", func() int32 {
		return c.d.cuMemsetD32Async(uint64(p), value, uintptr(count), s.handle())
	})
}

// cuMemHostAlloc flags: PORTABLE makes the buffer usable from every
// context, DEVICEMAP gives it a device address.
const (
	memHostAllocPortable  = 0x01
	memHostAllocDeviceMap = 0x02
)

// HostAllocMapped allocates page-locked host memory that kernels can read and
// write through dev. The memory lies outside the Go heap and stays valid until
// FreeHost; a kernel's writes are visible in host after a synchronize.
func (c *Context) HostAllocMapped(bytes int64) (host []byte, dev DevPtr, err error) {
	if bytes <= 0 {
		return nil, 0, fmt.Errorf("cuMemHostAlloc: size %d must be positive", bytes)
	}
	if err := c.enter("cuMemHostAlloc"); err != nil {
		return nil, 0, err
	}
	defer c.exit()
	var p unsafe.Pointer
	if err := c.d.check("cuMemHostAlloc", c.d.cuMemHostAlloc(&p, uintptr(bytes), memHostAllocPortable|memHostAllocDeviceMap)); err != nil {
		return nil, 0, fmt.Errorf("allocating %d bytes of mapped host memory: %w", bytes, err)
	}
	var d uint64
	if err := c.d.check("cuMemHostGetDevicePointer", c.d.cuMemHostGetDevicePointer(&d, p, 0)); err != nil {
		c.d.cuMemFreeHost(p)
		return nil, 0, err
	}
	return unsafe.Slice((*byte)(p), bytes), DevPtr(d), nil
}

// FreeHost frees memory from HostAllocMapped; host must be the slice it
// returned (or start at the same address).
func (c *Context) FreeHost(host []byte) error {
	if len(host) == 0 {
		return nil
	}
	return c.call("cuMemFreeHost", func() int32 { return c.d.cuMemFreeHost(unsafe.Pointer(unsafe.SliceData(host))) })
}

// Bytes views a slice of plain numbers as bytes, for CopyHtoD and CopyDtoH,
// without copying.
func Bytes[T ~float32 | ~float64 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~uint16 | ~int16 | ~uint8 | ~int8](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// A Module is a CUBIN loaded into a context.
type Module struct {
	c *Context
	h uintptr // CUmodule
}

// LoadModule loads a CUBIN (as NVRTC.Compile returns) into the context. The
// image is copied by the driver; it need not outlive the call.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuModuleLoadData: empty image")
	}
	var h uintptr
	err := c.call("cuModuleLoadData", func() int32 {
		return c.d.cuModuleLoadData(&h, unsafe.Pointer(unsafe.SliceData(image)))
	})
	runtime.KeepAlive(image)
	onSignalStack()
	if err != nil {
		return nil, fmt.Errorf("loading a %d-byte module: %w", len(image), err)
	}
	return &Module{c: c, h: h}, nil
}

// Function looks up an extern "C" __global__ function by name.
func (m *Module) Function(name string) (*Function, error) {
	var h uintptr
	if err := m.c.call("cuModuleGetFunction", func() int32 { return m.c.d.cuModuleGetFunction(&h, m.h, name) }); err != nil {
		return nil, fmt.Errorf("looking up kernel %q: %w", name, err)
	}
	return &Function{c: m.c, h: h, name: name}, nil
}

// Global returns the device address and size of a module's __device__
// or __constant__ variable (cuModuleGetGlobal): an engine may keep a
// launch parameter there, such as its dynamic shared memory size.
func (m *Module) Global(name string) (DevPtr, int64, error) {
	var p uint64
	var n uintptr
	if err := m.c.call("cuModuleGetGlobal", func() int32 { return m.c.d.cuModuleGetGlobal(&p, &n, m.h, name) }); err != nil {
		return 0, 0, fmt.Errorf("looking up the module variable %q: %w", name, err)
	}
	return DevPtr(p), int64(n), nil
}

// Unload unloads the module; its Functions become invalid.
func (m *Module) Unload() error {
	return m.c.call("cuModuleUnload", func() int32 { return m.c.d.cuModuleUnload(m.h) })
}

// A Function is a kernel in a loaded Module.
type Function struct {
	c    *Context
	h    uintptr // CUfunction
	name string
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// A ParamInfo is one kernel parameter's place in the parameter buffer.
type ParamInfo struct{ Offset, Size int }

// ErrNoParamInfo is returned by Params on a driver older than CUDA 12.4,
// which does not report a kernel's parameters.
var ErrNoParamInfo = errors.New("the driver does not report kernel parameters (cuFuncGetParamInfo needs CUDA 12.4 or later)")

// Params returns the kernel's parameters in order, as the compiler laid
// them out: what a declared argument list must match.
func (f *Function) Params() ([]ParamInfo, error) {
	if f.c.d.cuFuncGetParamInfo == nil {
		return nil, ErrNoParamInfo
	}
	var out []ParamInfo
	for i := uintptr(0); ; i++ {
		var off, size uintptr
		err := f.c.call("cuFuncGetParamInfo", func() int32 { return f.c.d.cuFuncGetParamInfo(f.h, i, &off, &size) })
		var ce *Error
		if errors.As(err, &ce) && ce.Code == ErrInvalidValue {
			return out, nil // past the last parameter
		}
		if err != nil {
			return nil, fmt.Errorf("reading parameter %d of %s: %w", i, f.name, err)
		}
		out = append(out, ParamInfo{int(off), int(size)})
	}
}

// A FuncAttr is a CUfunction_attribute: one property of a compiled kernel.
type FuncAttr int32

// Kernel attributes; the numbers are CUDA's CUfunction_attribute values.
const (
	// FuncMaxThreadsPerBlock is the largest block this kernel can launch
	// with, given its register use.
	FuncMaxThreadsPerBlock FuncAttr = 0
	// FuncSharedSizeBytes is the static shared memory per block.
	FuncSharedSizeBytes FuncAttr = 1
	// FuncConstSizeBytes is the constant memory the kernel uses.
	FuncConstSizeBytes FuncAttr = 2
	// FuncLocalSizeBytes is the local memory per thread; non-zero usually
	// means register spills.
	FuncLocalSizeBytes FuncAttr = 3
	// FuncNumRegs is the registers per thread.
	FuncNumRegs FuncAttr = 4
	// FuncPTXVersion is the PTX ISA version ×10 it was compiled for.
	FuncPTXVersion FuncAttr = 5
	// FuncBinaryVersion is the SASS architecture ×10 (90 for sm_90).
	FuncBinaryVersion FuncAttr = 6
	// FuncMaxDynamicSharedSizeBytes is the dynamic shared memory limit set
	// by SetMaxDynamicShared.
	FuncMaxDynamicSharedSizeBytes FuncAttr = 8
	// FuncNonPortableClusterSizeAllowed is 1 once
	// AllowNonPortableClusterSize has been called.
	FuncNonPortableClusterSizeAllowed FuncAttr = 14
)

// Attr reads one kernel attribute.
func (f *Function) Attr(a FuncAttr) (int, error) {
	var v int32
	if err := f.c.call("cuFuncGetAttribute", func() int32 { return f.c.d.cuFuncGetAttribute(&v, int32(a), f.h) }); err != nil {
		return 0, fmt.Errorf("reading attribute %d of kernel %s: %w", int32(a), f.name, err)
	}
	return int(v), nil
}

// SetMaxDynamicShared allows launches with up to bytes of dynamic shared
// memory; above 48 KiB a launch fails without it.
func (f *Function) SetMaxDynamicShared(bytes int) error {
	err := f.c.call("cuFuncSetAttribute", func() int32 {
		return f.c.d.cuFuncSetAttribute(f.h, int32(FuncMaxDynamicSharedSizeBytes), int32(bytes))
	})
	if err != nil {
		return fmt.Errorf("allowing %d bytes of dynamic shared memory for kernel %s: %w", bytes, f.name, err)
	}
	return nil
}

// AllowNonPortableClusterSize allows launches in thread-block clusters of
// more than 8 blocks (the portable size), up to what the device supports
// (16 on sm_90); without it such a launch fails.
func (f *Function) AllowNonPortableClusterSize() error {
	err := f.c.call("cuFuncSetAttribute", func() int32 {
		return f.c.d.cuFuncSetAttribute(f.h, int32(FuncNonPortableClusterSizeAllowed), 1)
	})
	if err != nil {
		return fmt.Errorf("allowing non-portable cluster sizes for kernel %s: %w", f.name, err)
	}
	return nil
}

// MaxActiveBlocksPerSM reports how many blocks of blockThreads threads with
// dynShared bytes of dynamic shared memory fit on one SM at once.
func (f *Function) MaxActiveBlocksPerSM(blockThreads, dynShared int) (int, error) {
	var n int32
	err := f.c.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", func() int32 {
		return f.c.d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f.h, int32(blockThreads), uintptr(dynShared))
	})
	if err != nil {
		return 0, fmt.Errorf("occupancy of kernel %s (block %d, %d B dynamic shared): %w", f.name, blockThreads, dynShared, err)
	}
	return int(n), nil
}
