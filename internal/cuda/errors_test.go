package cuda

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&Error{Call: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Msg: "an illegal memory access was encountered"},
			"cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"},
		// Without the driver's text the built-in table fills in.
		{&Error{Call: "cuMemAlloc", Code: 2},
			"cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{&Error{Call: "cuInit", Code: 4242},
			"cuInit: CUDA error 4242"},
		{&Error{Call: "cuInit", Code: 4242, Name: "CUDA_ERROR_FUTURE"},
			"cuInit: CUDA_ERROR_FUTURE (4242)"},
		{Result(716), "CUDA_ERROR_MISALIGNED_ADDRESS (716): misaligned address"},
		{Result(12345), "CUDA error 12345"},
		{&NVRTCError{Call: "nvrtcCompileProgram", Code: 6, Msg: "NVRTC_ERROR_COMPILATION"},
			"nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)"},
		{&NVRTCError{Call: "nvrtcGetCUBIN", Code: 3},
			"nvrtcGetCUBIN: NVRTC error 3"},
		{&CompileError{Name: "d2.cu", Log: "d2.cu(3): error: expected a \";\"\n\n1 error detected\n",
			Err: &NVRTCError{Call: "nvrtcCompileProgram", Code: 6, Msg: "NVRTC_ERROR_COMPILATION"}},
			"compiling d2.cu: nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6):\nd2.cu(3): error: expected a \";\"\n\n1 error detected"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

func TestIsSticky(t *testing.T) {
	// The faults after which CUDA documents that the process must be
	// restarted: illegal address, launch timeout, assert, hardware stack
	// error, illegal instruction, misaligned address, invalid address
	// space, invalid PC, launch failure.
	for _, code := range []Result{700, 702, 710, 714, 715, 716, 717, 718, 719} {
		e := &Error{Call: "cuCtxSynchronize", Code: code}
		if !IsSticky(e) {
			t.Errorf("IsSticky(%v) = false", e)
		}
		if !IsSticky(fmt.Errorf("measuring d2: %w", e)) {
			t.Errorf("IsSticky of a wrapped %d = false", code)
		}
		if !IsSticky(code) {
			t.Errorf("IsSticky(Result(%d)) = false", code)
		}
		if IsOutOfMemory(e) {
			t.Errorf("IsOutOfMemory(%v) = true", e)
		}
	}
	for _, err := range []error{nil, io.EOF, Result(2), &Error{Call: "cuMemAlloc", Code: 2}, Result(1), Result(701), &NVRTCError{Call: "x", Code: 6}} {
		if IsSticky(err) {
			t.Errorf("IsSticky(%v) = true", err)
		}
	}
}

func TestIsOutOfMemory(t *testing.T) {
	e := fmt.Errorf("allocating K: %w", &Error{Call: "cuMemAlloc", Code: 2})
	if !IsOutOfMemory(e) {
		t.Errorf("IsOutOfMemory(%v) = false", e)
	}
	if !errors.Is(e, ErrOutOfMemory) {
		t.Errorf("errors.Is(%v, ErrOutOfMemory) = false", e)
	}
	for _, err := range []error{nil, io.EOF, Result(700), Result(701), &Error{Code: 1}} {
		if IsOutOfMemory(err) {
			t.Errorf("IsOutOfMemory(%v) = true", err)
		}
	}
}
