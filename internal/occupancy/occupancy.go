// Package occupancy computes, without a GPU, how many blocks of a kernel
// launch an SM holds at once: what cuOccupancyMaxActiveBlocksPerMultiprocessor
// answers on the device, from the kernel's registers and shared memory
// (a CUBIN's, as ktune check reads them), the block and the dynamic shared
// memory, by the rules of CUDA's occupancy calculator (cuda_occupancy.h):
//
//   - blocks: the architecture's resident-block limit;
//   - warps: the SM's warp slots over the block's warps;
//   - registers: allocated per warp in units of 256, from four sub-partitions
//     of a quarter of the register file each (a warp never spans two);
//   - shared memory: the static, dynamic and reserved bytes of a block,
//     in units of 128, from the SM's largest carveout (what the default
//     carveout preference lets the driver pick).
//
// The per-SM figures are the architectures' (CCCL's cuda::arch_traits, the
// CUDA C++ Programming Guide's technical specifications). Named barriers
// and cluster launches, which the calculator also counts, are not: a
// kernel they limit gets a higher count here than on the device, and the
// device's answer, which a sweep checks before any launch, stays the one
// that decides.
package occupancy

import "fmt"

// SM is what one streaming multiprocessor of an architecture holds.
type SM struct {
	// Blocks, Threads: the resident blocks and threads at most.
	Blocks, Threads int
	// SharedBytes is the shared memory at the largest carveout;
	// ReservedShared is what the driver reserves of it for each block.
	SharedBytes, ReservedShared int
}

// RegistersPerBlock is the register file of an SM, and the most one
// block may use, on every architecture ktune builds for (sm_80 on): 64 Ki
// 32-bit registers.
const RegistersPerBlock = 64 << 10

// The allocation unit of a warp's registers, the register file's
// sub-partitions, the most registers a thread may have, and the
// allocation unit of a block's shared memory.
const (
	registerUnit  = 256
	subPartitions = 4
	maxThreadRegs = 255
	sharedUnit    = 128
	warpSize      = 32
)

// ReservedShared is the shared memory the driver reserves for each block
// on architecture number sm: 1 KiB from sm_80 on.
func ReservedShared(sm int) int {
	if sm >= 80 {
		return 1 << 10
	}
	return 0
}

// sms maps an SM number to its figures (ReservedShared filled in by For).
var sms = map[int]SM{
	80:  {Blocks: 32, Threads: 2048, SharedBytes: 164 << 10},
	86:  {Blocks: 16, Threads: 1536, SharedBytes: 100 << 10},
	87:  {Blocks: 16, Threads: 1536, SharedBytes: 164 << 10},
	89:  {Blocks: 24, Threads: 1536, SharedBytes: 100 << 10},
	90:  {Blocks: 32, Threads: 2048, SharedBytes: 228 << 10},
	100: {Blocks: 32, Threads: 2048, SharedBytes: 228 << 10},
	103: {Blocks: 32, Threads: 2048, SharedBytes: 228 << 10},
	110: {Blocks: 24, Threads: 1536, SharedBytes: 228 << 10},
	120: {Blocks: 24, Threads: 1536, SharedBytes: 100 << 10},
}

// For returns the SM of architecture number sm (90 for sm_90 and sm_90a),
// false for one not known here.
func For(sm int) (SM, bool) {
	s, ok := sms[sm]
	s.ReservedShared = ReservedShared(sm)
	return s, ok
}

// MaxSharedPerBlock is the static and dynamic shared memory one block may
// have (the opt-in limit): the SM's, less the driver's reserve.
func (s SM) MaxSharedPerBlock() int { return s.SharedBytes - s.ReservedShared }

// A Launch is what sets a launch's occupancy: the kernel's registers per
// thread and static shared bytes (without the driver's reserve), the
// block's threads and the launch's dynamic shared bytes.
type Launch struct {
	Registers, StaticShared, Threads, DynamicShared int
}

// A Limiter names the resource that bounds a launch's resident blocks.
type Limiter string

// The limiters. Where two bound alike, Blocks names the first of blocks,
// warps, registers and shared memory: fewer registers or bytes would not
// raise a count the SM's slots also hold down.
const (
	ByBlocks    Limiter = "blocks"
	ByWarps     Limiter = "warps"
	ByRegisters Limiter = "registers"
	BySharedMem Limiter = "shared memory"
)

// A Result is a launch's resident blocks per SM and what bounds them; 0
// blocks when one block does not fit (Limiter says which resource).
type Result struct {
	Blocks  int
	Limiter Limiter
}

func (r Result) String() string {
	return fmt.Sprintf("%d blocks per SM (%s)", r.Blocks, r.Limiter)
}

// Blocks computes l's resident blocks on sm.
func Blocks(sm SM, l Launch) (Result, error) {
	if l.Threads < 1 || l.Registers < 0 || l.StaticShared < 0 || l.DynamicShared < 0 {
		return Result{}, fmt.Errorf("occupancy of %d threads, %d registers, %d + %d shared bytes: want a block and no negative count", l.Threads, l.Registers, l.StaticShared, l.DynamicShared)
	}
	warps := ceilDiv(l.Threads, warpSize)
	limits := []Result{
		{sm.Blocks, ByBlocks},
		{sm.Threads / warpSize / warps, ByWarps},
		{registerBlocks(l.Registers, warps), ByRegisters},
		{sharedBlocks(sm, l.StaticShared+l.DynamicShared), BySharedMem},
	}
	out := limits[0]
	for _, r := range limits[1:] {
		if r.Blocks < out.Blocks {
			out = r
		}
	}
	return out, nil
}

// registerBlocks is the blocks of warps warps whose threads have regs
// registers each that the register file holds: each warp's registers
// rounded up to the allocation unit, from one sub-partition.
func registerBlocks(regs, warps int) int {
	perWarp := warpRegisters(regs)
	if perWarp == 0 {
		return int(^uint(0) >> 1)
	}
	// The hardware checks a block as if its warps were spread over every
	// sub-partition; a block over the register file never launches.
	if regs > maxThreadRegs || perWarp*ceilDiv(warps, subPartitions)*subPartitions > RegistersPerBlock || perWarp*warps > RegistersPerBlock {
		return 0
	}
	return RegistersPerBlock / subPartitions / perWarp * subPartitions / warps
}

// sharedBlocks is the blocks using bytes of static and dynamic shared
// memory each that the SM's largest carveout holds, the driver's reserve
// added to each.
func sharedBlocks(sm SM, bytes int) int {
	perBlock := ceilDiv(bytes+sm.ReservedShared, sharedUnit) * sharedUnit
	if perBlock > sm.SharedBytes {
		return 0
	}
	if perBlock == 0 {
		return int(^uint(0) >> 1)
	}
	return sm.SharedBytes / perBlock
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// warpRegisters is what a warp of threads of regs registers each is
// allocated: a multiple of the allocation unit (8 registers a thread).
func warpRegisters(regs int) int { return ceilDiv(regs*warpSize, registerUnit) * registerUnit }

// BlockRegisters is the register file a block of threads of regs
// registers each is allocated, warp by warp; a block over
// RegistersPerBlock never launches.
func BlockRegisters(regs, threads int) int { return warpRegisters(regs) * ceilDiv(threads, warpSize) }
