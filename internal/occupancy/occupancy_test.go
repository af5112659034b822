package occupancy

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestMatchesTheDriver holds the calculation to what the driver answered
// on sm_90 (H200 and H100) for every distinct kernel footprint ktune has
// recorded: registers from 10 to 255, static shared memory up to 44 KiB,
// blocks of 32 to 512 threads.
func TestMatchesTheDriver(t *testing.T) {
	f, err := os.Open("testdata/sm90-driver.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sm, _ := For(90)
	seen, limiters := 0, map[Limiter]int{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.Split(text, "\t")
		var n [5]int
		for i := range n {
			if n[i], err = strconv.Atoi(cols[i]); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		}
		l := Launch{Registers: n[0], StaticShared: n[1], DynamicShared: n[2], Threads: n[3]}
		got, err := Blocks(sm, l)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		if got.Blocks != n[4] {
			t.Errorf("line %d: %+v: %v, the driver said %d (%s)", line, l, got, n[4], cols[6])
		}
		seen++
		limiters[got.Limiter]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("%d footprints read, want the file's 124", seen)
	}
	// The table must exercise more than one rule, or a wrong rule could
	// hide behind the one that binds everywhere.
	for _, lim := range []Limiter{ByRegisters, BySharedMem, ByBlocks} {
		if limiters[lim] == 0 {
			t.Errorf("no footprint of the table is bound by %s: %v", lim, limiters)
		}
	}
}

func TestByHand(t *testing.T) {
	h100, _ := For(90)
	ada, _ := For(89)
	for _, c := range []struct {
		name string
		sm   SM
		l    Launch
		want Result
	}{
		// 64 registers: 2048 a warp, 8 warps a sub-partition, 32 an SM:
		// 8 blocks of 4 warps (FlashInfer's decode kernel, group 8).
		{"64 regs", h100, Launch{Registers: 64, StaticShared: 1024, DynamicShared: 9216, Threads: 128}, Result{8, ByRegisters}},
		// 40 registers: 1280 a warp, 12 warps a sub-partition (12.8
		// rounded down), 48 an SM: 12 blocks of 4 warps (its merge kernel).
		{"40 regs", h100, Launch{Registers: 40, StaticShared: 1024, DynamicShared: 8704, Threads: 128}, Result{12, ByRegisters}},
		// 168 registers (5376 a warp): 3 warps a sub-partition, 12 an SM:
		// one block of 8 warps.
		{"168 regs x 256", h100, Launch{Registers: 168, Threads: 256}, Result{1, ByRegisters}},
		// 50 registers round up to 56 (1792 a warp): 9 warps a
		// sub-partition, 36 an SM: 12 blocks of 3 warps.
		{"50 regs x 96", h100, Launch{Registers: 50, Threads: 96}, Result{12, ByRegisters}},
		// 72 registers (2304 a warp): 7 warps a sub-partition (7.1
		// rounded down), 28 an SM: 7 blocks of 4.
		{"72 regs x 128", h100, Launch{Registers: 72, Threads: 128}, Result{7, ByRegisters}},
		// Shared memory: 100 KiB + 1 KiB reserved a block: 2 on 228 KiB.
		{"shared", h100, Launch{Registers: 32, StaticShared: 100 << 10, Threads: 128}, Result{2, BySharedMem}},
		// The 128-byte unit: 20096 + 1024 reserved = 21120, 11 blocks in
		// 228 KiB (a 256-byte unit would make it 21248 and 10).
		{"shared unit", h100, Launch{Registers: 32, StaticShared: 20096, Threads: 32}, Result{11, BySharedMem}},
		// Over the block limit of shared memory: no block.
		{"too much shared", h100, Launch{Registers: 32, DynamicShared: 228 << 10, Threads: 128}, Result{0, BySharedMem}},
		// Warps: 1536 threads an SM on sm_89, blocks of 512: 3.
		{"warps", ada, Launch{Registers: 16, Threads: 512}, Result{3, ByWarps}},
		// Blocks: 24 on sm_89 for tiny blocks.
		{"blocks", ada, Launch{Registers: 16, Threads: 32}, Result{24, ByBlocks}},
		// 256 registers a thread: over the 255 a thread may have.
		{"256 regs", h100, Launch{Registers: 256, Threads: 32}, Result{0, ByRegisters}},
		// 128 registers x 1024 threads: 131072, over a block's 65536.
		{"block over the file", h100, Launch{Registers: 128, Threads: 1024}, Result{0, ByRegisters}},
	} {
		got, err := Blocks(c.sm, c.l)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: %+v gives %v, want %v", c.name, c.l, got, c.want)
		}
	}
}

func TestRefusesNoBlock(t *testing.T) {
	sm, _ := For(90)
	if _, err := Blocks(sm, Launch{Registers: 32}); err == nil {
		t.Error("a launch of 0 threads computed an occupancy")
	}
	if _, ok := For(75); ok {
		t.Error("sm_75 is not described here; For must say so rather than guess")
	}
}

// TestMonotone: more registers, shared memory or threads a block never
// lets more blocks reside.
func TestMonotone(t *testing.T) {
	for _, n := range []int{80, 86, 89, 90, 120} {
		sm, _ := For(n)
		for regs := 16; regs <= 255; regs += 7 {
			for threads := 32; threads <= 1024; threads += 96 {
				for shared := 0; shared <= 96<<10; shared += 12 << 10 {
					base, _ := Blocks(sm, Launch{Registers: regs, StaticShared: shared, Threads: threads})
					for _, more := range []Launch{
						{Registers: regs + 1, StaticShared: shared, Threads: threads},
						{Registers: regs, StaticShared: shared + 512, Threads: threads},
						{Registers: regs, StaticShared: shared, Threads: threads + 32},
					} {
						if got, _ := Blocks(sm, more); got.Blocks > base.Blocks {
							t.Fatalf("sm_%d: %+v holds %d, more (%+v) holds %d", n, Launch{Registers: regs, StaticShared: shared, Threads: threads}, base.Blocks, more, got.Blocks)
						}
					}
				}
			}
		}
	}
}
