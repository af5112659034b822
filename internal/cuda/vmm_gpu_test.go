package cuda

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestGPUHole: memory before a hole holds what is copied into it, a
// device-to-device copy fills it, a kernel may write its last bytes, and
// (in a child process, since the fault is sticky) a write one element
// past its end faults.
func TestGPUHole(t *testing.T) {
	if os.Getenv("KTUNE_CUDA_HOLE_CHILD") == "1" {
		holeChild(t)
		return
	}
	ctx, nv, arch := gpu(t)
	const n = 3<<20 + 128 // not a multiple of the granularity
	a, err := ctx.AllocBeforeHole(n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if a.Ptr%16 != 0 {
		t.Errorf("pointer %#x is not 16-byte aligned", a.Ptr)
	}
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := ctx.CopyHtoD(a.Ptr, want); err != nil {
		t.Fatal(err)
	}
	b, err := ctx.AllocBeforeHole(n)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := ctx.CopyDtoDAsync(b.Ptr, a.Ptr, n, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := ctx.CopyDtoH(got, b.Ptr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the copy through the device differs")
	}
	mod, poke := loadEntry(t, ctx, nv, arch, axpySrc, "axpy.cu", map[string]string{"twice.cuh": "#define TWICE(a) (a)\n"}, "poke")
	defer mod.Unload()
	// The last 32 floats: inside.
	if err := ctx.Launch(poke, [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, nil, b.Ptr+n-128); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatalf("writing the last bytes before the hole: %v", err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(); err != nil {
		t.Errorf("a second release: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUHole$", "-test.v")
	cmd.Env = append(os.Environ(), "KTUNE_CUDA_HOLE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

// holeChild writes 32 floats starting 64 bytes before the hole: the last
// 16 of them land in it.
func holeChild(t *testing.T) {
	ctx, nv, arch := gpu(t)
	h, err := ctx.AllocBeforeHole(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	_, poke := loadEntry(t, ctx, nv, arch, axpySrc, "axpy.cu", map[string]string{"twice.cuh": "#define TWICE(a) (a)\n"}, "poke")
	if err := ctx.Launch(poke, [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, nil, h.Ptr+(1<<20)-64); err != nil {
		t.Fatal(err)
	}
	err = ctx.Synchronize()
	t.Logf("synchronize after writing past the hole's edge: %v", err)
	if !IsSticky(err) {
		t.Fatalf("a write past the end: %v; want a sticky fault", err)
	}
}
