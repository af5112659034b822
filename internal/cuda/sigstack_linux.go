package cuda

import (
	"syscall"
	"unsafe"
)

// The CUDA driver installs signal handlers of its own (SIGINT among them)
// without SA_ONSTACK, and they call on to the Go runtime's. A signal then
// reaches Go's handler on a goroutine's stack instead of the signal
// stack, and the runtime dies ("non-Go code set up signal handler without
// SA_ONSTACK flag"): a Ctrl-C, or the INT of a time limit, ended an
// in-process sweep so on an H200, before it could close its files.
// onSignalStack, called after each step that loads or initialises the
// driver or NVRTC, adds SA_ONSTACK to every installed handler that lacks
// it and leaves the handlers themselves as they are.

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
