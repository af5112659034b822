package probe

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/cuda"
)

// TestGPUCopies: ktune_copies leaves a buffer as the copies of its list
// made one by one would: whole 16-byte words, odd offsets and lengths,
// sources shared by several copies, and a list longer than the device's
// stage holds (two launches). Then the batch-16 tiling's list (32768
// pages of 128 KiB each, 4 GiB), whose speed it logs.
func TestGPUCopies(t *testing.T) {
	b := gpuBackend(t)
	const size = 64 << 20
	p, err := b.ctx.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	defer b.ctx.Free(p)
	host := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range host {
		host[i] = byte(rng.Uint32())
	}
	if err := b.ctx.CopyHtoD(p, host); err != nil {
		t.Fatal(err)
	}
	// Sources in the first 1 MiB, destinations past it, none overlapping.
	var cs []devCopy
	at := int64(1 << 20)
	add := func(src, n int64) {
		cs = append(cs, devCopy{p + devOff(at), p + devOff(src), n})
		copy(host[at:at+n], host[src:src+n])
		at += n
	}
	for range 1000 {
		add(16*rng.Int64N(1<<14), 16*(1+rng.Int64N(256))) // 16-byte words
		add(rng.Int64N(1<<19), 1+rng.Int64N(5000))        // bytes
		at += rng.Int64N(3)
	}
	// Past one stage of the list: 16 bytes each from one source.
	for at+16 <= size && len(cs) <= stageMax/copyBytes {
		add(4096, 16)
	}
	if len(cs) <= stageMax/copyBytes {
		t.Fatalf("%d copies: not more than one stage", len(cs))
	}
	if err := b.copyList(cs); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if err := b.stream.Synchronize(); err != nil {
		t.Fatalf("running the copy kernel: %v", err)
	}
	if err := b.ctx.CopyDtoH(got, p); err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(host, got); i >= 0 {
		t.Fatalf("%d copies: byte %d is %#02x on the device, %#02x expected", len(cs), i, got[i], host[i])
	}

	const page, pages = 128 << 10, 32768
	q, err := b.ctx.Alloc((pages + 64) * page)
	if err != nil {
		t.Fatal(err)
	}
	defer b.ctx.Free(q)
	cs = cs[:0]
	for j := range pages {
		cs = append(cs, devCopy{q + cuda.DevPtr((64+j)*page), q + cuda.DevPtr(j%64*page), page})
	}
	start := time.Now()
	if err := b.copyList(cs); err != nil {
		t.Fatal(err)
	}
	if err := b.stream.Synchronize(); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("copied %d pages of %d KiB (%.1f GiB) in %v: %.0f GB/s written", pages, page>>10, float64(pages*page)/(1<<30), el, float64(pages*page)/el.Seconds()/1e9)
}
