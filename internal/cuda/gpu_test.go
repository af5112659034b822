package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// gpu opens the driver, device 0, a context and NVRTC, or skips the test.
func gpu(t *testing.T) (*Context, *NVRTC, string) {
	t.Helper()
	d, err := Open()
	if NoUsableDevice(err) {
		t.Skipf("no usable GPU here: %v", err)
	}
	if err != nil {
		t.Fatalf("opening the CUDA driver: %v", err)
	}
	if n, err := d.DeviceCount(); err != nil || n == 0 {
		t.Skipf("no CUDA device (count %d, %v)", n, err)
	}
	nv, err := OpenNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ma, err := dev.Attr(AttrComputeCapabilityMajor)
	if err != nil {
		t.Fatal(err)
	}
	mi, err := dev.Attr(AttrComputeCapabilityMinor)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// After a deliberate fault the release reports it again.
		if err := ctx.Close(); err != nil && !IsSticky(err) {
			t.Error(err)
		}
	})
	return ctx, nv, fmt.Sprintf("-arch=sm_%d%d", ma, mi)
}

// loadEntry compiles src for arch, loads it as a module and looks up
// entry; the caller unloads the module (or leaves it to a context that a
// fault has ended).
func loadEntry(t *testing.T, ctx *Context, nv *NVRTC, arch, src, file string, headers map[string]string, entry string) (*Module, *Function) {
	t.Helper()
	cubin, log, err := nv.Compile(src, file, headers, []string{arch})
	if err != nil {
		t.Fatalf("%v\nlog: %s", err, log)
	}
	mod, err := ctx.LoadModule(cubin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mod.Function(entry)
	if err != nil {
		t.Fatal(err)
	}
	return mod, f
}

// axpySrc exercises every argument kind Launch accepts and an #include
// served from the headers map; thread 0 echoes the scalars into tags so the
// test can see how each was passed.
const axpySrc = `#include "twice.cuh"
extern "C" __global__ void axpy(float* y, const float* x, int n, float a,
                                unsigned long long tag, unsigned int u, int neg,
                                unsigned long long* tags) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = TWICE(a) * x[i] + y[i];
  if (i == 0) {
    tags[0] = tag;
    tags[1] = u;
    tags[2] = (unsigned long long)(long long)neg;
  }
}
extern "C" __global__ void poke(float* p) { p[threadIdx.x] = 1.0f; }
`

func TestGPUDevice(t *testing.T) {
	ctx, nv, arch := gpu(t)
	d, _ := Open()
	if d2, _ := Open(); d2 != d {
		t.Errorf("Open returned a second driver; it must be idempotent")
	}
	ma, mi, err := d.Version()
	if err != nil || ma < 12 {
		t.Errorf("driver version %d.%d, %v", ma, mi, err)
	}
	nma, nmi, err := nv.Version()
	if err != nil || nma < 12 {
		t.Errorf("NVRTC version %d.%d, %v", nma, nmi, err)
	}
	dev := ctx.Device()
	name, err := dev.Name()
	if err != nil || name == "" {
		t.Errorf("Name = %q, %v", name, err)
	}
	uuid, err := dev.UUID()
	if err != nil || !strings.HasPrefix(uuid, "GPU-") || len(uuid) != 40 {
		t.Errorf("UUID = %q, %v", uuid, err)
	}
	total, err := dev.TotalMem()
	if err != nil || total < 1<<30 {
		t.Errorf("TotalMem = %d, %v", total, err)
	}
	free, ctotal, err := ctx.MemInfo()
	if err != nil || ctotal <= 0 || ctotal > total || free <= 0 || free > ctotal {
		t.Errorf("MemInfo = %d free of %d, %v (TotalMem %d)", free, ctotal, err, total)
	}
	t.Logf("%s %s, driver CUDA %d.%d, NVRTC %d.%d (%s), %s, %.1f GiB", name, uuid, ma, mi, nma, nmi, nv.Path(), arch, float64(total)/(1<<30))
	for _, a := range []struct {
		name string
		attr DeviceAttr
		min  int
	}{
		{"SMs", AttrMultiprocessorCount, 1},
		{"L2 bytes", AttrL2CacheSize, 1 << 20},
		{"bus width", AttrGlobalMemoryBusWidth, 64},
		{"threads/SM", AttrMaxThreadsPerMultiprocessor, 1024},
		{"smem/SM", AttrMaxSharedMemoryPerMultiprocessor, 48 << 10},
		{"regs/SM", AttrMaxRegistersPerMultiprocessor, 32 << 10},
		{"smem optin", AttrMaxSharedMemoryPerBlockOptin, 48 << 10},
		{"warp", AttrWarpSize, 32},
	} {
		v, err := dev.Attr(a.attr)
		if err != nil || v < a.min {
			t.Errorf("%s = %d, %v; want ≥ %d", a.name, v, err, a.min)
		}
		t.Logf("%s = %d", a.name, v)
	}
	for _, a := range []DeviceAttr{AttrClockRate, AttrMemoryClockRate} {
		v, err := dev.Attr(a) // deprecated in CUDA 13: report, do not require
		t.Logf("attribute %d = %d, %v", a, v, err)
	}
}

func TestGPULaunchEventsGraph(t *testing.T) {
	ctx, nv, arch := gpu(t)
	cubin, log, err := nv.Compile(axpySrc, "axpy.cu", map[string]string{"twice.cuh": "#define TWICE(a) (2.0f * (a))\n"}, []string{arch})
	if err != nil {
		t.Fatalf("%v\nlog: %s", err, log)
	}
	mod, err := ctx.LoadModule(cubin)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	f, err := mod.Function("axpy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Function("no_such_kernel"); !errors.Is(err, ErrNotFound) {
		t.Errorf("looking up a missing kernel: %v, want CUDA_ERROR_NOT_FOUND", err)
	}
	regs, _ := f.Attr(FuncNumRegs)
	maxThreads, _ := f.Attr(FuncMaxThreadsPerBlock)
	bin, _ := f.Attr(FuncBinaryVersion)
	wantBin := 0
	fmt.Sscanf(arch, "-arch=sm_%d", &wantBin)
	if regs <= 0 || maxThreads < 256 || bin != wantBin {
		t.Errorf("attrs: %d regs, %d max threads, binary %d (want %d)", regs, maxThreads, bin, wantBin)
	}
	if err := f.SetMaxDynamicShared(64 << 10); err != nil {
		t.Error(err)
	}
	if v, _ := f.Attr(FuncMaxDynamicSharedSizeBytes); v != 64<<10 {
		t.Errorf("max dynamic shared = %d after setting 64 KiB", v)
	}
	if n, err := f.MaxActiveBlocksPerSM(256, 0); err != nil || n < 1 {
		t.Errorf("MaxActiveBlocksPerSM(256, 0) = %d, %v", n, err)
	}

	const n = 1000
	const a = float32(0.75)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%17) - 8
	}
	xd, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(xd)
	yd, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(yd)
	if err := ctx.CopyHtoD(xd, Bytes(x)); err != nil {
		t.Fatal(err)
	}
	tags, tagsDev, err := ctx.HostAllocMapped(24)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.FreeHost(tags)
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	start, _ := ctx.NewEvent()
	end, _ := ctx.NewEvent()
	defer start.Destroy()
	defer end.Destroy()

	launch := func() error {
		return ctx.Launch(f, [3]int{(n + 255) / 256, 1, 1}, [3]int{256, 1, 1}, 0, s,
			yd, xd, n, a, uint64(0x0123_4567_89AB_CDEF), uint32(0xFEDC_BA98), int32(-7), tagsDev)
	}
	check := func(what string, times int) {
		t.Helper()
		y := make([]float32, n)
		if err := ctx.CopyDtoH(Bytes(y), yd); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			want := 1 + float32(times)*(2*a*x[i])
			if math.Abs(float64(y[i]-want)) > 1e-5 {
				t.Fatalf("%s: y[%d] = %v, want %v", what, i, y[i], want)
			}
		}
	}

	// One launch between events on a stream, after a stream-ordered memset.
	if err := ctx.MemsetD32Async(yd, math.Float32bits(1), n, s); err != nil {
		t.Fatal(err)
	}
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := launch(); err != nil {
		t.Fatal(err)
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	ms, err := Elapsed(start, end)
	if err != nil || ms <= 0 || ms > 1000 {
		t.Errorf("Elapsed = %v ms, %v", ms, err)
	}
	t.Logf("one launch: %.1f µs by events", ms*1000)
	check("direct launch", 1)
	le := func(b []byte) uint64 {
		var v uint64
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v
	}
	if t0, t1, t2 := le(tags[0:]), le(tags[8:]), le(tags[16:]); t0 != 0x0123_4567_89AB_CDEF || t1 != 0xFEDC_BA98 || t2 != math.MaxUint64-6 {
		t.Errorf("kernel saw tag %#x, u %#x, neg %#x in mapped host memory", t0, t1, t2)
	}

	// Capture memset+launch into a graph and replay it: the result must be
	// that of one pass, and a second replay must start from the memset again.
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.MemsetD32Async(yd, math.Float32bits(1), n, s); err != nil {
		t.Fatal(err)
	}
	if err := launch(); err != nil {
		t.Fatal(err)
	}
	if err := launch(); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	for range 2 {
		if err := g.Launch(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check("graph replay", 2)
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

func TestGPUCompileErrors(t *testing.T) {
	_, nv, arch := gpu(t)
	_, log, err := nv.Compile("extern \"C\" __global__ void k() { int x = ; }\n", "broken.cu", nil, []string{arch})
	var ce *CompileError
	if !errors.As(err, &ce) || ce.Log != log || !strings.Contains(log, "broken.cu") || !strings.Contains(log, "error") {
		t.Errorf("compiling broken source: err %v, log %q; want a *CompileError carrying the log", err, log)
	}
	_, _, err = nv.Compile("extern \"C\" __global__ void k() {}\n", "virtual.cu", nil, []string{"-arch=compute_80"})
	if err == nil || !strings.Contains(err.Error(), "-arch=sm_XX") {
		t.Errorf("compiling for a virtual architecture: %v, want an error asking for -arch=sm_XX", err)
	}
}

func TestGPUOutOfMemory(t *testing.T) {
	ctx, _, _ := gpu(t)
	_, err := ctx.Alloc(1 << 50)
	if !IsOutOfMemory(err) || IsSticky(err) {
		t.Errorf("allocating 1 PiB: %v; want a non-sticky out-of-memory error", err)
	}
	// The context must still work.
	p, err := ctx.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	ctx.Free(p)
}

func TestGPUClosedContext(t *testing.T) {
	ctx, _, _ := gpu(t)
	dev := ctx.Device()
	c2, err := dev.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c2.Alloc(16); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Alloc on a closed context: %v", err)
	}
}

// TestGPUIllegalAddressIsSticky faults a kernel in a child process, because
// the fault poisons the context for the rest of the process.
func TestGPUIllegalAddressIsSticky(t *testing.T) {
	if os.Getenv("KTUNE_CUDA_FAULT_CHILD") == "1" {
		faultChild(t)
		return
	}
	gpu(t) // skip without a GPU
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUIllegalAddressIsSticky$", "-test.v")
	cmd.Env = append(os.Environ(), "KTUNE_CUDA_FAULT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func faultChild(t *testing.T) {
	ctx, nv, arch := gpu(t)
	_, f := loadEntry(t, ctx, nv, arch, axpySrc, "axpy.cu", map[string]string{"twice.cuh": "#define TWICE(a) (a)\n"}, "poke")
	// An address no allocation covers.
	if err := ctx.Launch(f, [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, nil, DevPtr(0x10)); err != nil {
		t.Fatal(err)
	}
	err := ctx.Synchronize()
	t.Logf("synchronize after the fault: %v", err)
	if !IsSticky(err) {
		t.Fatalf("after an illegal access: %v; want a sticky error", err)
	}
	// Sticky means every later call fails too (on the H200 cuMemAlloc
	// returns the same 700).
	if _, err := ctx.Alloc(16); !IsSticky(err) {
		t.Errorf("allocation after the fault: %v; want the sticky error again", err)
	}
}

// clusterSrc has every block write the cluster shape it runs in, as the
// hardware reports it, and its rank within the cluster.
const clusterSrc = `extern "C" __global__ void cluster_shape(unsigned* out) {
  unsigned x, y, z, n;
  asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(x));
  asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(y));
  asm volatile("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(z));
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(n));
  unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) { out[4*b] = x; out[4*b+1] = y; out[4*b+2] = z; out[4*b+3] = n; }
}
`

// A launch with a cluster (with programmatic serialization as well, so
// two attributes) runs every block in a cluster of that shape, directly
// and replayed from a captured graph; above 8 blocks after the
// non-portable opt-in.
func TestGPUClusterLaunch(t *testing.T) {
	ctx, nv, arch := gpu(t)
	var sm int
	fmt.Sscanf(arch, "-arch=sm_%d", &sm)
	if sm < 90 {
		t.Skipf("%s has no thread-block clusters", arch)
	}
	mod, f := loadEntry(t, ctx, nv, arch, clusterSrc, "cluster.cu", nil, "cluster_shape")
	defer mod.Unload()
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const most = 64
	out, err := ctx.Alloc(4 * 4 * most)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(out)
	check := func(what string, grid, cluster [3]int) {
		t.Helper()
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		got := make([]uint32, 4*most)
		if err := ctx.CopyDtoH(Bytes(got), out); err != nil {
			t.Fatal(err)
		}
		size := uint32(cluster[0] * cluster[1] * cluster[2])
		for b := range grid[0] * grid[1] * grid[2] {
			w := got[4*b : 4*b+4]
			if w[0] != uint32(cluster[0]) || w[1] != uint32(cluster[1]) || w[2] != uint32(cluster[2]) || w[3] >= size {
				t.Fatalf("%s: block %d ran in a %d×%d×%d cluster at rank %d, want %v", what, b, w[0], w[1], w[2], w[3], cluster)
			}
		}
	}
	grid, cluster := [3]int{4, 2, 2}, [3]int{2, 1, 2}
	attrs := LaunchAttrs{Programmatic: true, Cluster: cluster}
	if err := ctx.MemsetD32Async(out, 0xffffffff, 4*most, s); err != nil {
		t.Fatal(err)
	}
	if err := ctx.LaunchWith(attrs, f, grid, [3]int{32, 1, 1}, 0, s, out); err != nil {
		t.Fatal(err)
	}
	check("direct launch", grid, cluster)

	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.MemsetD32Async(out, 0xffffffff, 4*most, s); err != nil {
		t.Fatal(err)
	}
	if err := ctx.LaunchWith(attrs, f, grid, [3]int{32, 1, 1}, 0, s, out); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if err := g.Launch(s); err != nil {
		t.Fatal(err)
	}
	check("graph replay", grid, cluster)

	grid, cluster = [3]int{32, 1, 1}, [3]int{16, 1, 1}
	if err := f.AllowNonPortableClusterSize(); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Attr(FuncNonPortableClusterSizeAllowed); v != 1 {
		t.Errorf("non-portable cluster size attribute %d after allowing it", v)
	}
	if err := ctx.LaunchWith(LaunchAttrs{Cluster: cluster}, f, grid, [3]int{32, 1, 1}, 0, s, out); err != nil {
		t.Fatal(err)
	}
	check("non-portable cluster", grid, cluster)
}

// TestGPUParams: the driver reports a kernel's parameters in order with
// the compiler's offsets and sizes: a pointer, an int, a by-value struct
// (20 bytes of fields, sizeof 24, 8-aligned), a uint3 (12 bytes,
// 4-aligned); the loop that reads them ends where the driver says there
// are no more.
func TestGPUParams(t *testing.T) {
	ctx, nv, arch := gpu(t)
	src := `struct s20 { long long a; int b[3]; };
extern "C" __global__ void params(float *p, int n, const __grid_constant__ s20 s, uint3 u) {
    if (n < 0) p[0] = s.a + s.b[0] + u.x;
}`
	mod, f := loadEntry(t, ctx, nv, arch, src, "params.cu", nil, "params")
	defer mod.Unload()
	ps, err := f.Params()
	if errors.Is(err, ErrNoParamInfo) {
		t.Skip(err)
	}
	want := []ParamInfo{{0, 8}, {8, 4}, {16, 24}, {40, 12}}
	if err != nil || fmt.Sprint(ps) != fmt.Sprint(want) {
		t.Errorf("params %v, %v; want %v", ps, err, want)
	}
}
