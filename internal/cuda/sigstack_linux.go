package cuda

import (
	"syscall"
	"unsafe"
)

// On an H200 an in-process sweep died at its time limit's INT: "signal 2
// received but handler not on signal stack; fatal error: non-Go code set
// up signal handler without SA_ONSTACK flag". The kernel had called Go's
// own handler, put back without the flag (as saving a handler and
// restoring it with signal(2) does), so the signal landed on a
// goroutine's stack. NVRTC's first compile in a process does that (NVRTC
// 11.8 here: SIGINT, SIGTERM and SIGXFSZ), and a sweep compiles in its own
// process, in-process or not. onSignalStack
// adds SA_ONSTACK to every installed handler that lacks it, handlers and
// masks left as they are; it runs after the steps that load or run CUDA's
// libraries' own setup and compilers: dlopen, cuInit, a context's retain,
// an NVRTC compile and a module load (the PTX JIT). A signal in the middle
// of one of those calls can still meet the handler without the flag.

// sigaction is the kernel's struct for rt_sigaction on linux/amd64 and
// linux/arm64.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const (
	saOnStack = 0x08000000
	sigDfl    = 0
	sigIgn    = 1
	nsig      = 65
)

func rtSigaction(sig int, act, old *sigaction) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), unsafe.Sizeof(sigaction{}.mask), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// onSignalStack sets SA_ONSTACK on every handler installed without it and
// returns their signals.
func onSignalStack() []int {
	var fixed []int
	for sig := 1; sig < nsig; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) {
			continue
		}
		var a sigaction
		if rtSigaction(sig, nil, &a) != nil {
			continue // a signal number the kernel does not have
		}
		if a.handler == sigDfl || a.handler == sigIgn || a.flags&saOnStack != 0 {
			continue
		}
		a.flags |= saOnStack
		if rtSigaction(sig, &a, nil) == nil {
			fixed = append(fixed, sig)
		}
	}
	return fixed
}
