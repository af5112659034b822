package probe

import (
	"testing"

	"github.com/ktune/ktune/internal/cubin"
	"github.com/ktune/ktune/internal/cuda"
)

// TestUtilCompiles builds util.cu as loadUtil does, for sm_90, and finds
// every kernel loadUtil looks up among the image's entries. ktune_fill's
// 16-byte word is built in registers: a stack frame would mean the
// compiler put it in local memory, a round trip per store.
func TestUtilCompiles(t *testing.T) {
	nv, err := cuda.OpenNVRTC()
	if err != nil {
		t.Skipf("no NVRTC on this machine, so nothing can be compiled: %v", err)
	}
	src, err := utilSource()
	if err != nil {
		t.Fatal(err)
	}
	image, log, err := nv.Compile(src.Text, src.Name, nil, compileOptions("sm_90", nil, nil))
	if err != nil {
		t.Fatalf("compiling util.cu: %v\n%s", err, log)
	}
	img, err := cubin.Parse(image)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range (&utilKernels{}).entries() {
		fn := img.Functions[e.name]
		if fn == nil || !fn.Entry {
			t.Errorf("util.cu has no entry %s (it has %v)", e.name, img.Entries())
			continue
		}
		if e.name == "ktune_fill" && (fn.FrameBytes != 0 || fn.StackBytes != 0) {
			t.Errorf("ktune_fill has a frame of %d bytes and a stack of %d: it uses local memory, a round trip for every word it stores", fn.FrameBytes, fn.StackBytes)
		}
	}
}
