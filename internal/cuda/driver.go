package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// libcudaName is the driver's SONAME; the unversioned libcuda.so belongs to
// the development package and is often absent on a machine that only runs.
const libcudaName = "libcuda.so.1"

// A Driver is the loaded libcuda with cuInit done. Obtain it from Open.
type Driver struct {
	cuInit                                      func(flags uint32) int32
	cuDriverGetVersion                          func(v *int32) int32
	cuGetErrorName                              func(r int32, s **byte) int32
	cuGetErrorString                            func(r int32, s **byte) int32
	cuDeviceGetCount                            func(n *int32) int32
	cuDeviceGet                                 func(dev *int32, ordinal int32) int32
	cuDeviceGetName                             func(buf *byte, n int32, dev int32) int32
	cuDeviceGetUuid                             func(uuid *[16]byte, dev int32) int32
	cuDeviceTotalMem                            func(bytes *uintptr, dev int32) int32
	cuDeviceGetAttribute                        func(v *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain                    func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease                   func(dev int32) int32
	cuCtxSetCurrent                             func(ctx uintptr) int32
	cuCtxSynchronize                            func() int32
	cuMemGetInfo                                func(free, total *uintptr) int32
	cuMemAlloc                                  func(p *uint64, bytes uintptr) int32
	cuMemFree                                   func(p uint64) int32
	cuMemcpyHtoD                                func(dst uint64, src unsafe.Pointer, n uintptr) int32
	cuMemcpyDtoH                                func(dst unsafe.Pointer, src uint64, n uintptr) int32
	cuMemsetD32Async                            func(p uint64, v uint32, n uintptr, s uintptr) int32
	cuMemHostAlloc                              func(p *unsafe.Pointer, bytes uintptr, flags uint32) int32
	cuMemHostGetDevicePointer                   func(d *uint64, p unsafe.Pointer, flags uint32) int32
	cuMemFreeHost                               func(p unsafe.Pointer) int32
	cuModuleLoadData                            func(m *uintptr, image unsafe.Pointer) int32
	cuModuleLoadDataEx                          func(m *uintptr, image uintptr, numOptions uint32, options, values uintptr) int32
	cuModuleGetFunction                         func(f *uintptr, m uintptr, name string) int32
	cuModuleGetGlobal                           func(p *uint64, bytes *uintptr, m uintptr, name string) int32
	cuModuleUnload                              func(m uintptr) int32
	cuFuncGetAttribute                          func(v *int32, attr int32, f uintptr) int32
	cuFuncSetAttribute                          func(f uintptr, attr int32, v int32) int32
	cuOccupancyMaxActiveBlocksPerMultiprocessor func(n *int32, f uintptr, block int32, dynShared uintptr) int32
	cuLaunchKernel                              func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params uintptr, extra uintptr) int32
	cuLaunchKernelEx                            func(config uintptr, f uintptr, params uintptr, extra uintptr) int32
	cuStreamCreate                              func(s *uintptr, flags uint32) int32
	cuStreamSynchronize                         func(s uintptr) int32
	cuStreamDestroy                             func(s uintptr) int32
	cuEventCreate                               func(e *uintptr, flags uint32) int32
	cuEventRecord                               func(e uintptr, s uintptr) int32
	cuEventSynchronize                          func(e uintptr) int32
	cuEventElapsedTime                          func(ms *float32, start, end uintptr) int32
	cuEventDestroy                              func(e uintptr) int32
	cuStreamBeginCapture                        func(s uintptr, mode int32) int32
	cuStreamEndCapture                          func(s uintptr, g *uintptr) int32
	cuGraphInstantiateWithFlags                 func(exec *uintptr, g uintptr, flags uint64) int32
	cuGraphDestroy                              func(g uintptr) int32
	cuGraphLaunch                               func(exec uintptr, s uintptr) int32
	cuGraphExecDestroy                          func(exec uintptr) int32
	cuMemcpyDtoDAsync                           func(dst, src uint64, n uintptr, s uintptr) int32
	cuMemGetAllocationGranularity               func(g *uintptr, prop unsafe.Pointer, option int32) int32
	cuMemCreate                                 func(h *uint64, size uintptr, prop unsafe.Pointer, flags uint64) int32
	cuMemAddressReserve                         func(p *uint64, size, align uintptr, addr uint64, flags uint64) int32
	cuMemMap                                    func(p uint64, size, offset uintptr, h uint64, flags uint64) int32
	cuMemSetAccess                              func(p uint64, size uintptr, desc unsafe.Pointer, count uintptr) int32
	cuMemUnmap                                  func(p uint64, size uintptr) int32
	cuMemAddressFree                            func(p uint64, size uintptr) int32
	cuMemRelease                                func(h uint64) int32
	// cuFuncGetParamInfo is the driver's record of a kernel's parameters
	// (CUDA 12.4 and later); nil on an older driver, which then cannot
	// check a declared argument list (Function.Params).
	cuFuncGetParamInfo func(f uintptr, index uintptr, offset, size *uintptr) int32
	// cuTensorMapEncodeTiled encodes a CUtensorMap (CUDA 12.0 and later);
	// nil on an older driver (EncodeTensorMapTiled).
	cuTensorMapEncodeTiled func(tm unsafe.Pointer, dtype, rank uint32, addr uint64, dims, strides, box, elemStrides unsafe.Pointer,
		interleave, swizzle, l2, oob uint32) int32
}

// bindings lists every driver entry point ktune uses. The names follow the
// #define mapping of CUDA 13's cuda.h (cuMemAlloc → cuMemAlloc_v2 and so on);
// where a later ABI version exists the older name follows as a fallback for
// older drivers with the same prototype.
func (d *Driver) bindings() []binding {
	return []binding{
		{&d.cuInit, names("cuInit")},
		{&d.cuDriverGetVersion, names("cuDriverGetVersion")},
		{&d.cuGetErrorName, names("cuGetErrorName")},
		{&d.cuGetErrorString, names("cuGetErrorString")},
		{&d.cuDeviceGetCount, names("cuDeviceGetCount")},
		{&d.cuDeviceGet, names("cuDeviceGet")},
		{&d.cuDeviceGetName, names("cuDeviceGetName")},
		{&d.cuDeviceGetUuid, names("cuDeviceGetUuid_v2", "cuDeviceGetUuid")},
		{&d.cuDeviceTotalMem, names("cuDeviceTotalMem_v2")},
		{&d.cuDeviceGetAttribute, names("cuDeviceGetAttribute")},
		{&d.cuDevicePrimaryCtxRetain, names("cuDevicePrimaryCtxRetain")},
		{&d.cuDevicePrimaryCtxRelease, names("cuDevicePrimaryCtxRelease_v2")},
		{&d.cuCtxSetCurrent, names("cuCtxSetCurrent")},
		{&d.cuCtxSynchronize, names("cuCtxSynchronize")},
		{&d.cuMemGetInfo, names("cuMemGetInfo_v2")},
		{&d.cuMemAlloc, names("cuMemAlloc_v2")},
		{&d.cuMemFree, names("cuMemFree_v2")},
		{&d.cuMemcpyHtoD, names("cuMemcpyHtoD_v2")},
		{&d.cuMemcpyDtoH, names("cuMemcpyDtoH_v2")},
		{&d.cuMemsetD32Async, names("cuMemsetD32Async")},
		{&d.cuMemHostAlloc, names("cuMemHostAlloc")},
		{&d.cuMemHostGetDevicePointer, names("cuMemHostGetDevicePointer_v2")},
		{&d.cuMemFreeHost, names("cuMemFreeHost")},
		{&d.cuModuleLoadData, names("cuModuleLoadData")},
		{&d.cuModuleLoadDataEx, names("cuModuleLoadDataEx")},
		{&d.cuModuleGetFunction, names("cuModuleGetFunction")},
		{&d.cuModuleGetGlobal, names("cuModuleGetGlobal_v2")},
		{&d.cuModuleUnload, names("cuModuleUnload")},
		{&d.cuFuncGetAttribute, names("cuFuncGetAttribute")},
		{&d.cuFuncSetAttribute, names("cuFuncSetAttribute")},
		{&d.cuOccupancyMaxActiveBlocksPerMultiprocessor, names("cuOccupancyMaxActiveBlocksPerMultiprocessor")},
		{&d.cuLaunchKernel, names("cuLaunchKernel")},
		{&d.cuLaunchKernelEx, names("cuLaunchKernelEx")},
		{&d.cuStreamCreate, names("cuStreamCreate")},
		{&d.cuStreamSynchronize, names("cuStreamSynchronize")},
		{&d.cuStreamDestroy, names("cuStreamDestroy_v2")},
		{&d.cuEventCreate, names("cuEventCreate")},
		{&d.cuEventRecord, names("cuEventRecord")},
		{&d.cuEventSynchronize, names("cuEventSynchronize")},
		{&d.cuEventElapsedTime, names("cuEventElapsedTime_v2", "cuEventElapsedTime")},
		{&d.cuEventDestroy, names("cuEventDestroy_v2")},
		{&d.cuStreamBeginCapture, names("cuStreamBeginCapture_v2")},
		{&d.cuStreamEndCapture, names("cuStreamEndCapture")},
		{&d.cuGraphInstantiateWithFlags, names("cuGraphInstantiateWithFlags")},
		{&d.cuGraphDestroy, names("cuGraphDestroy")},
		{&d.cuGraphLaunch, names("cuGraphLaunch")},
		{&d.cuGraphExecDestroy, names("cuGraphExecDestroy")},
		{&d.cuMemcpyDtoDAsync, names("cuMemcpyDtoDAsync_v2")},
		{&d.cuMemGetAllocationGranularity, names("cuMemGetAllocationGranularity")},
		{&d.cuMemCreate, names("cuMemCreate")},
		{&d.cuMemAddressReserve, names("cuMemAddressReserve")},
		{&d.cuMemMap, names("cuMemMap")},
		{&d.cuMemSetAccess, names("cuMemSetAccess")},
		{&d.cuMemUnmap, names("cuMemUnmap")},
		{&d.cuMemAddressFree, names("cuMemAddressFree")},
		{&d.cuMemRelease, names("cuMemRelease")},
	}
}

// driverCache makes Open idempotent: the driver is loaded and initialised
// once per process, whatever the number of callers.
var driverCache struct {
	mu sync.Mutex
	d  *Driver
}

// Open loads libcuda.so.1 and calls cuInit(0). It returns the same *Driver on
// every call once that has succeeded; a failure is not remembered, so a later
// call tries again. A machine without the driver gets a *LibraryError; a
// driver that finds no GPU gets an *Error with ErrNoDevice.
func Open() (*Driver, error) {
	driverCache.mu.Lock()
	defer driverCache.mu.Unlock()
	if driverCache.d != nil {
		return driverCache.d, nil
	}
	d, err := openDriver(dlopener{})
	if err != nil {
		return nil, err
	}
	driverCache.d = d
	return d, nil
}

func openDriver(o opener) (*Driver, error) {
	lib, _, tried := tryOpen(o, []string{libcudaName})
	if lib == nil {
		return nil, &LibraryError{
			Lib:   libcudaName,
			Tried: tried,
			Hint:  "install the NVIDIA driver, or this machine has no NVIDIA GPU",
		}
	}
	d := &Driver{}
	if err := bind(lib, libcudaName, d.bindings()); err != nil {
		return nil, fmt.Errorf("loading the CUDA driver: %w", err)
	}
	// Optional: bound when the driver has it, without failing the load.
	_ = bind(lib, libcudaName, []binding{{&d.cuFuncGetParamInfo, names("cuFuncGetParamInfo")}})
	_ = bind(lib, libcudaName, []binding{{&d.cuTensorMapEncodeTiled, names("cuTensorMapEncodeTiled")}})
	err := d.check("cuInit", d.cuInit(0))
	onSignalStack() // the driver's own handlers (sigstack_linux.go)
	if err != nil {
		return nil, fmt.Errorf("initialising the CUDA driver (%s): %w", libcudaName, err)
	}
	return d, nil
}

// check turns a CUresult into nil or an *Error carrying the driver's text.
func (d *Driver) check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Code: Result(r)}
	var p *byte
	if d.cuGetErrorName != nil && d.cuGetErrorName(r, &p) == 0 {
		e.Name = goString(p)
	}
	p = nil
	if d.cuGetErrorString != nil && d.cuGetErrorString(r, &p) == 0 {
		e.Msg = goString(p)
	}
	return e
}

// goString copies a NUL-terminated C string owned by the library.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// Version reports the CUDA version the driver supports (13.0 for driver 580).
func (d *Driver) Version() (major, minor int, err error) {
	var v int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return 0, 0, err
	}
	return int(v) / 1000, int(v) % 1000 / 10, nil
}

// DeviceCount reports the number of GPUs visible to this process (after
// CUDA_VISIBLE_DEVICES).
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns the GPU with the given ordinal, 0 ≤ ordinal < DeviceCount.
func (d *Driver) Device(ordinal int) (Device, error) {
	var dev int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return Device{}, fmt.Errorf("getting device %d: %w", ordinal, err)
	}
	return Device{d: d, dev: dev}, nil
}
