//go:build !linux

package cuda

// onSignalStack is Linux's (sigstack_linux.go); elsewhere there is nothing
// to set.
func onSignalStack() []int { return nil }
