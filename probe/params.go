package probe

import (
	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/plan"
)

// checkParams compares each launch's declared arguments with its kernel's
// own parameters, where the driver reports them: ktune passes each
// argument where its declaration puts it, so a declaration the kernel does
// not have (a struct declared as a pointer, a missing argument) would have
// the driver read every argument after it from the wrong bytes, silently.
// The error names the first parameter that differs.
func checkParams(k *kernelPair, launches []plan.Launch) error {
	for _, l := range launches {
		got, ok := k.params[l.Entry]
		if !ok {
			continue // a driver before CUDA 12.4: nothing to check against
		}
		if err := abi.CheckParams(l.Entry, l.Args, got); err != nil {
			return err
		}
	}
	return nil
}
