package cuda

import (
	"bytes"
	"testing"
)

// templSrc has a template kernel that only a name expression instantiates.
const templSrc = `template <typename T, int N>
__global__ void fill(T* p, T v) { if (threadIdx.x < N) p[threadIdx.x] = v * (T)N; }
`

// TestGPUNameExpressions compiles a template through NVRTC name
// expressions, looks the instantiation up by its lowered name and runs it.
func TestGPUNameExpressions(t *testing.T) {
	ctx, nv, arch := gpu(t)
	expr := "fill<float, 4>"
	cubin, _, lowered, err := nv.CompileNamed(templSrc, "templ.cu", nil, []string{arch}, []string{expr})
	if err != nil {
		t.Fatal(err)
	}
	name := lowered[expr]
	if name == "" || name == expr {
		t.Fatalf("lowered name of %q = %q, want a mangled symbol", expr, name)
	}
	mod, err := ctx.LoadImage(cubin)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	f, err := mod.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ctx.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(p)
	if err := ctx.Launch(f, [3]int{1, 1, 1}, [3]int{4, 1, 1}, 0, nil, p, float32(1.5)); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 16)
	if err := ctx.CopyDtoH(out, p); err != nil {
		t.Fatal(err)
	}
	want := Bytes([]float32{6, 6, 6, 6})
	if !bytes.Equal(out, want) {
		t.Errorf("fill<float, 4> wrote % x, want % x", out, want)
	}
}

// ptxSrc is PTX of a kernel that stores 7 to p[0], written by hand so the
// test needs no nvcc; version 7.0 and sm_50 load on every driver ktune
// supports, which the JIT compiles for the device at hand.
const ptxSrc = `.version 7.0
.target sm_50
.address_size 64
.visible .entry seven(.param .u64 p)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, 7;
	st.global.u32 [%rd2], %r1;
	ret;
}
`

// TestGPULoadPTX loads PTX text through the driver's JIT and runs it, and
// checks that a broken PTX fails with the JIT's log in the error.
func TestGPULoadPTX(t *testing.T) {
	ctx, _, _ := gpu(t)
	if Kind([]byte(ptxSrc)) != ImagePTX {
		t.Fatal("PTX text not recognised as PTX")
	}
	mod, err := ctx.LoadImage([]byte(ptxSrc))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	f, err := mod.Function("seven")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ctx.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(p)
	if err := ctx.Launch(f, [3]int{1, 1, 1}, [3]int{1, 1, 1}, 0, nil, p); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4)
	if err := ctx.CopyDtoH(out, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, []byte{7, 0, 0, 0}) {
		t.Errorf("seven wrote % x", out)
	}
	if _, err := ctx.LoadImage([]byte(".version 7.0\n.target sm_50\nbogus;\n")); err == nil {
		t.Error("a broken PTX loaded")
	} else {
		t.Logf("broken PTX: %v", err)
	}
}
