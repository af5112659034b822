package cuda

import (
	"slices"
	"syscall"
	"testing"
)

// TestOnSignalStack: a handler installed without SA_ONSTACK, as the CUDA
// driver installs its own, gets the flag back and keeps its handler and
// mask; a handler already on the signal stack is left as it is.
func TestOnSignalStack(t *testing.T) {
	sig := int(syscall.SIGUSR2) // the Go runtime's handler, SA_ONSTACK set
	var orig sigaction
	if err := rtSigaction(sig, nil, &orig); err != nil {
		t.Fatal(err)
	}
	defer rtSigaction(sig, &orig, nil)
	if orig.handler == sigDfl || orig.handler == sigIgn || orig.flags&saOnStack == 0 {
		t.Skipf("SIGUSR2 has no Go handler with SA_ONSTACK here (handler %#x, flags %#x)", orig.handler, orig.flags)
	}
	c := orig
	c.flags &^= saOnStack // what non-Go code without the flag leaves
	if err := rtSigaction(sig, &c, nil); err != nil {
		t.Fatal(err)
	}
	var dfl sigaction
	if err := rtSigaction(int(syscall.SIGWINCH), nil, &dfl); err != nil {
		t.Fatal(err)
	}
	fixed := onSignalStack()
	if !slices.Contains(fixed, sig) {
		t.Errorf("fixed %v, want SIGUSR2 (%d) among them", fixed, sig)
	}
	var got sigaction
	if err := rtSigaction(sig, nil, &got); err != nil {
		t.Fatal(err)
	}
	if got.flags&saOnStack == 0 || got.handler != orig.handler || got.mask != orig.mask {
		t.Errorf("after: handler %#x flags %#x mask %#x; before: handler %#x flags %#x mask %#x",
			got.handler, got.flags, got.mask, orig.handler, orig.flags, orig.mask)
	}
	if slices.Contains(onSignalStack(), sig) {
		t.Error("a handler already on the signal stack was set again")
	}
	var after sigaction
	if err := rtSigaction(int(syscall.SIGWINCH), nil, &after); err != nil {
		t.Fatal(err)
	}
	if after != dfl {
		t.Errorf("SIGWINCH changed: %+v -> %+v", dfl, after)
	}
}

// TestCompileKeepsSignalStack: NVRTC's first compile in a process puts
// SIGINT's handler back without SA_ONSTACK (seen with NVRTC 11.8: SIGINT,
// SIGTERM and SIGXFSZ), and a Ctrl-C then kills the process; after
// Compile every handler has the flag. Needs NVRTC, not a GPU.
func TestCompileKeepsSignalStack(t *testing.T) {
	nv, err := OpenNVRTC()
	if err != nil {
		t.Skipf("no NVRTC here: %v", err)
	}
	if _, log, err := nv.Compile(`extern "C" __global__ void k(int *p) { *p = 1; }`, "k.cu", nil, []string{"-arch=sm_90"}); err != nil {
		t.Skipf("NVRTC does not build for sm_90 here: %v\n%s", err, log)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		var a sigaction
		if err := rtSigaction(int(sig), nil, &a); err != nil {
			t.Fatal(err)
		}
		if a.handler != sigDfl && a.handler != sigIgn && a.flags&saOnStack == 0 {
			t.Errorf("%v: handler %#x without SA_ONSTACK after a compile", sig, a.handler)
		}
	}
}
