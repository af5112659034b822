package probe

import (
	"testing"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
)

// TestGPUFill: ktune_fill writes, for every KV type, exactly the bytes
// fillValues does over the range of elements asked for, from an odd first
// element and for an odd count (partial 16-byte words at both ends, and
// more words than one pass of the grid covers), and nothing outside it.
// Then a fill of 1 GiB through fillOnDevice, whose speed it logs.
func TestGPUFill(t *testing.T) {
	b := gpuBackend(t)
	const pattern = 0xA5A5A5A5
	for _, ty := range kvtype.All {
		elt := int64(ty.Bytes)
		for _, c := range []struct{ first, n int64 }{{5, 3}, {1, 1}, {3, (10<<20)/elt + 5}} {
			size := (c.first+c.n)*elt + 32
			size = (size + 15) &^ 15
			p, err := b.ctx.Alloc(size)
			if err != nil {
				t.Fatal(err)
			}
			defer b.ctx.Free(p)
			if err := b.ctx.MemsetD32Async(p, pattern, size/4, b.stream); err != nil {
				t.Fatal(err)
			}
			if err := b.fillDevice(p, c.first, c.n, ty, fillSeed+1); err != nil {
				t.Fatal(err)
			}
			if err := b.stream.Synchronize(); err != nil {
				t.Fatalf("%s: running the fill kernel: %v", ty, err)
			}
			got := make([]byte, size)
			if err := b.ctx.CopyDtoH(got, p); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, size)
			for i := range want {
				want[i] = 0xA5
			}
			lo, hi := c.first*elt, (c.first+c.n)*elt
			fillValues(want[lo:hi], ty, fillSeed+1, c.first)
			if i := firstDiff(want, got); i >= 0 {
				where := "inside"
				if int64(i) < lo || int64(i) >= hi {
					where = "outside"
				}
				t.Errorf("%s elements [%d, %d): byte %d (%s the range) is %#02x on the device, %#02x expected",
					ty, c.first, c.first+c.n, i, where, got[i], want[i])
			}
		}
	}

	const n = 1 << 30
	p, err := b.ctx.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.ctx.Free(p)
	f := bufferFill{name: "k", p: p, n: n, t: kvtype.F16, seed: fillSeed + 1}
	read := func(dst []byte, src cuda.DevPtr) error {
		if err := b.stream.Synchronize(); err != nil {
			return err
		}
		return b.ctx.CopyDtoH(dst, src)
	}
	start := time.Now()
	if err := fillOnDevice(f, b.fillDevice, read); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled and checked 1 GiB of f16 on the device in %v", time.Since(start))
}
