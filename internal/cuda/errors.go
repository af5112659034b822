package cuda

import (
	"errors"
	"fmt"
)

// A Result is a CUresult, the status code every driver call returns.
type Result int

// Results that callers test for. The numbers are CUDA's cudaError_enum.
const (
	Success                 Result = 0
	ErrInvalidValue         Result = 1
	ErrOutOfMemory          Result = 2
	ErrNotInitialized       Result = 3
	ErrStubLibrary          Result = 34
	ErrInsufficientDriver   Result = 35
	ErrNoDevice             Result = 100
	ErrInvalidDevice        Result = 101
	ErrInvalidImage         Result = 200
	ErrInvalidContext       Result = 201
	ErrNoBinaryForGPU       Result = 209
	ErrECCUncorrectable     Result = 214
	ErrInvalidPTX           Result = 218
	ErrNVLinkUncorrectable  Result = 220
	ErrUnsupportedPTX       Result = 222
	ErrContained            Result = 226
	ErrInvalidHandle        Result = 400
	ErrNotFound             Result = 500
	ErrNotReady             Result = 600
	ErrIllegalAddress       Result = 700
	ErrLaunchOutOfResources Result = 701
	ErrLaunchTimeout        Result = 702
	ErrAssert               Result = 710
	ErrHardwareStack        Result = 714
	ErrIllegalInstruction   Result = 715
	ErrMisalignedAddress    Result = 716
	ErrInvalidAddressSpace  Result = 717
	ErrInvalidPC            Result = 718
	ErrLaunchFailed         Result = 719
	ErrNotSupported         Result = 801
	ErrSystemDriverMismatch Result = 803
	ErrCompatNotSupported   Result = 804
	ErrCaptureUnsupported   Result = 900
	ErrCaptureInvalidated   Result = 901
	ErrCaptureWrongThread   Result = 908
	ErrExternalDevice       Result = 911
	ErrUnknown              Result = 999
)

// resultText names the results ktune is likely to meet, so that a Result
// prints usefully even where the driver's own cuGetErrorName is unavailable.
var resultText = map[Result][2]string{
	Success:                 {"CUDA_SUCCESS", "no error"},
	ErrInvalidValue:         {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	ErrOutOfMemory:          {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	ErrNotInitialized:       {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	ErrStubLibrary:          {"CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	ErrInsufficientDriver:   {"CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient for CUDA runtime version"},
	ErrNoDevice:             {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	ErrInvalidDevice:        {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	ErrInvalidImage:         {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	ErrInvalidContext:       {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	ErrNoBinaryForGPU:       {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	ErrECCUncorrectable:     {"CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
	ErrInvalidPTX:           {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	ErrNVLinkUncorrectable:  {"CUDA_ERROR_NVLINK_UNCORRECTABLE", "uncorrectable NVLink error detected during the execution"},
	ErrUnsupportedPTX:       {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
	ErrContained:            {"CUDA_ERROR_CONTAINED", "invalid access of peer GPU memory over nvlink or a hardware error"},
	ErrInvalidHandle:        {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	ErrNotFound:             {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	ErrNotReady:             {"CUDA_ERROR_NOT_READY", "device not ready"},
	ErrIllegalAddress:       {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	ErrLaunchOutOfResources: {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	ErrLaunchTimeout:        {"CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	ErrAssert:               {"CUDA_ERROR_ASSERT", "device-side assert triggered"},
	ErrHardwareStack:        {"CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
	ErrIllegalInstruction:   {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
	ErrMisalignedAddress:    {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	ErrInvalidAddressSpace:  {"CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
	ErrInvalidPC:            {"CUDA_ERROR_INVALID_PC", "invalid program counter"},
	ErrLaunchFailed:         {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	ErrNotSupported:         {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	ErrSystemDriverMismatch: {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
	ErrCompatNotSupported:   {"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
	ErrCaptureUnsupported:   {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
	ErrCaptureInvalidated:   {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
	ErrCaptureWrongThread:   {"CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread"},
	ErrExternalDevice:       {"CUDA_ERROR_EXTERNAL_DEVICE", "an async error has occurred in external entity outside of CUDA"},
	ErrUnknown:              {"CUDA_ERROR_UNKNOWN", "unknown error"},
}

// Name returns the CUDA_ERROR_… name, or "" for a code ktune does not know.
func (r Result) Name() string { return resultText[r][0] }

// Error prints "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access
// was encountered", or "CUDA error 12345" for a code ktune does not know.
// An *Error from a live driver carries the driver's own text instead.
func (r Result) Error() string {
	t, ok := resultText[r]
	if !ok {
		return fmt.Sprintf("CUDA error %d", int(r))
	}
	return fmt.Sprintf("%s (%d): %s", t[0], int(r), t[1])
}

// An Error is a driver call that failed.
type Error struct {
	// Call is the driver function, e.g. "cuLaunchKernel".
	Call string
	// Code is the CUresult it returned.
	Code Result
	// Name is the result's name from cuGetErrorName ("CUDA_ERROR_…").
	Name string
	// Msg is the description from cuGetErrorString.
	Msg string
}

func (e *Error) Error() string {
	name, msg := e.Name, e.Msg
	if name == "" {
		name = e.Code.Name()
	}
	if msg == "" {
		msg = resultText[e.Code][1]
	}
	switch {
	case name == "":
		return fmt.Sprintf("%s: CUDA error %d", e.Call, int(e.Code))
	case msg == "":
		return fmt.Sprintf("%s: %s (%d)", e.Call, name, int(e.Code))
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, name, int(e.Code), msg)
}

// Unwrap returns the Result, so errors.Is(err, cuda.ErrOutOfMemory) works.
func (e *Error) Unwrap() error { return e.Code }

// stickyResults leave the context unusable: after one of them every later
// call in the process fails the same way, and only a new process recovers.
// The driver documents this for the kernel faults (7xx), for contained
// hardware errors and for errors reported by an external device.
var stickyResults = map[Result]bool{
	ErrECCUncorrectable:    true,
	ErrNVLinkUncorrectable: true,
	ErrContained:           true,
	ErrIllegalAddress:      true,
	ErrLaunchTimeout:       true,
	ErrAssert:              true,
	ErrHardwareStack:       true,
	ErrIllegalInstruction:  true,
	ErrMisalignedAddress:   true,
	ErrInvalidAddressSpace: true,
	ErrInvalidPC:           true,
	ErrLaunchFailed:        true,
	ErrExternalDevice:      true,
}

// IsSticky reports whether err carries a CUDA result after which the context
// (in practice the process) can no longer run work: a kernel fault such as an
// illegal or misaligned address, a device assert or trap, or a hardware error.
// A sweep that meets one must stop using the device and say so, because every
// later measurement would fail or be meaningless.
func IsSticky(err error) bool {
	var r Result
	return errors.As(err, &r) && stickyResults[r]
}

// IsOutOfMemory reports whether err is CUDA_ERROR_OUT_OF_MEMORY. It is not
// sticky: freeing memory and retrying with a smaller problem is allowed.
func IsOutOfMemory(err error) bool {
	var r Result
	return errors.As(err, &r) && r == ErrOutOfMemory
}

// ErrNoUsableDevice marks an error that says this process has no GPU it
// can run kernels on, for a reason other than the driver's own result: a
// device ordinal past the count, or an NVRTC too old for the device's
// architecture. Wrap it with %w.
var ErrNoUsableDevice = errors.New("no usable CUDA device")

// noDeviceResults are the driver results that mean "no GPU here" rather
// than "something went wrong on a GPU": a machine with the driver's
// user-space library (Debian's libcuda1, pulled in by nvidia-cuda-toolkit)
// but no device answers cuInit with CUDA_ERROR_NO_DEVICE; a container
// without the kernel module, with the stub library or a mismatched one.
var noDeviceResults = map[Result]bool{
	ErrStubLibrary:          true,
	ErrInsufficientDriver:   true,
	ErrNoDevice:             true,
	ErrInvalidDevice:        true,
	ErrSystemDriverMismatch: true,
	ErrCompatNotSupported:   true,
}

// NoUsableDevice reports whether err, met while opening the driver, NVRTC
// or a device, means that this machine cannot run kernels at all: a
// library missing (*LibraryError), a driver that finds no device or cannot
// drive it (CUDA_ERROR_NO_DEVICE and the results like it), or an error
// wrapping ErrNoUsableDevice. It is the one test every GPU test's skip
// uses, so that a build server with the CUDA toolkit but no GPU skips them
// with the driver's reason instead of failing them. A kernel fault, an
// out-of-memory or a driver too old for a call ktune needs is not "no
// device": those fail.
func NoUsableDevice(err error) bool {
	if err == nil {
		return false
	}
	var le *LibraryError
	if errors.As(err, &le) || errors.Is(err, ErrNoUsableDevice) {
		return true
	}
	var r Result
	return errors.As(err, &r) && noDeviceResults[r]
}
