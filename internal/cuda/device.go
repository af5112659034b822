package cuda

import (
	"bytes"
	"fmt"
)

// A Device is one GPU as the driver numbers it. The zero Device is invalid.
type Device struct {
	d   *Driver
	dev int32 // CUdevice
}

// Ordinal returns the driver's handle for the device (its CUdevice).
func (dev Device) Ordinal() int { return int(dev.dev) }

// Name returns the product name, e.g. "NVIDIA H200".
func (dev Device) Name() (string, error) {
	var buf [256]byte
	if err := dev.d.check("cuDeviceGetName", dev.d.cuDeviceGetName(&buf[0], int32(len(buf)), dev.dev)); err != nil {
		return "", err
	}
	if i := bytes.IndexByte(buf[:], 0); i >= 0 {
		return string(buf[:i]), nil
	}
	return string(buf[:]), nil
}

// UUID returns the device UUID in the form nvidia-smi prints,
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", which identifies the board
// across reboots and renumbering (the ordinal does not).
func (dev Device) UUID() (string, error) {
	var u [16]byte
	if err := dev.d.check("cuDeviceGetUuid", dev.d.cuDeviceGetUuid(&u, dev.dev)); err != nil {
		return "", err
	}
	return formatUUID(u), nil
}

func formatUUID(u [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// TotalMem returns the device memory in bytes.
func (dev Device) TotalMem() (int64, error) {
	var n uintptr
	if err := dev.d.check("cuDeviceTotalMem", dev.d.cuDeviceTotalMem(&n, dev.dev)); err != nil {
		return 0, err
	}
	return int64(n), nil
}

// A DeviceAttr is a CUdevice_attribute: one property of a GPU.
type DeviceAttr int32

// Device attributes ktune reads. The numbers are CUDA's CUdevice_attribute
// values, which are ABI and never renumbered.
const (
	// AttrMaxThreadsPerBlock is the largest block size a launch may use.
	AttrMaxThreadsPerBlock DeviceAttr = 1
	// AttrMaxSharedMemoryPerBlock is the static shared memory a block may use.
	AttrMaxSharedMemoryPerBlock DeviceAttr = 8
	// AttrWarpSize is the warp width in threads.
	AttrWarpSize DeviceAttr = 10
	// AttrClockRate is the peak SM clock in kHz. CUDA 13 deprecates it;
	// a driver may answer an error or 0, so treat it as informative only.
	AttrClockRate DeviceAttr = 13
	// AttrMultiprocessorCount is the number of SMs.
	AttrMultiprocessorCount DeviceAttr = 16
	// AttrMemoryClockRate is the peak memory clock in kHz (deprecated like
	// AttrClockRate).
	AttrMemoryClockRate DeviceAttr = 36
	// AttrGlobalMemoryBusWidth is the memory bus width in bits.
	AttrGlobalMemoryBusWidth DeviceAttr = 37
	// AttrL2CacheSize is the L2 cache size in bytes.
	AttrL2CacheSize DeviceAttr = 38
	// AttrMaxThreadsPerMultiprocessor is the resident thread limit per SM.
	AttrMaxThreadsPerMultiprocessor DeviceAttr = 39
	// AttrComputeCapabilityMajor is the major compute capability (9 for sm_90).
	AttrComputeCapabilityMajor DeviceAttr = 75
	// AttrComputeCapabilityMinor is the minor compute capability.
	AttrComputeCapabilityMinor DeviceAttr = 76
	// AttrMaxSharedMemoryPerMultiprocessor is the shared memory per SM in bytes.
	AttrMaxSharedMemoryPerMultiprocessor DeviceAttr = 81
	// AttrMaxRegistersPerMultiprocessor is the 32-bit registers per SM.
	AttrMaxRegistersPerMultiprocessor DeviceAttr = 82
	// AttrMaxSharedMemoryPerBlockOptin is the dynamic shared memory a block
	// may use after Function.SetMaxDynamicShared.
	AttrMaxSharedMemoryPerBlockOptin DeviceAttr = 97
	// AttrMaxBlocksPerMultiprocessor is the resident block limit per SM.
	AttrMaxBlocksPerMultiprocessor DeviceAttr = 106
)

// Attr reads one device attribute.
func (dev Device) Attr(a DeviceAttr) (int, error) {
	var v int32
	if err := dev.d.check("cuDeviceGetAttribute", dev.d.cuDeviceGetAttribute(&v, int32(a), dev.dev)); err != nil {
		return 0, fmt.Errorf("reading device attribute %d: %w", int32(a), err)
	}
	return int(v), nil
}
