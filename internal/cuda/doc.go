// Package cuda is the only code in ktune that talks to the NVIDIA driver
// (libcuda) and to the runtime compiler (NVRTC).
//
// Both libraries are loaded at run time with purego, so ktune builds with
// CGO_ENABLED=0 on a machine that has no GPU, and a machine without the
// driver or the toolkit gets a *LibraryError that says what was looked for,
// where, why each attempt failed (the dlerror text), and what to install.
// Loading is idempotent: Open and OpenNVRTC load once per process and return
// the same value afterwards.
//
// # Threads and contexts
//
// The driver keeps its "current context" per OS thread, while Go moves
// goroutines between threads freely. Every method of Context and of the
// objects made from it (Stream, Event, Graph, Module, Function) therefore
// locks the calling goroutine to its thread for the duration of the call and
// makes the context current first (cuCtxSetCurrent, a few tens of
// nanoseconds). Callers need no runtime.LockOSThread of their own, and a
// Context may be used from several goroutines. The one exception is stream
// capture: CUDA ties a thread-local capture to the thread that began it, so
// Stream.BeginCapture keeps the goroutine locked to its thread until the
// matching Stream.EndCapture, and both must be called from the same goroutine.
//
// A Context is the device's primary context (cuDevicePrimaryCtxRetain), the
// same one the CUDA runtime and PyTorch use, which avoids cuCtxCreate, whose
// signature changed in CUDA 13.
//
// # Memory handed to the driver
//
// Go's pointer-passing rules forbid handing C an array of pointers that lives
// in the Go heap. Kernel arguments (Context.Launch) and NVRTC's arrays of
// strings are therefore built in memory mapped outside the Go heap (mmap), and
// mapped host buffers come from cuMemHostAlloc.
package cuda
