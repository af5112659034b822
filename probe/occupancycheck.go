package probe

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/occupancy"
)

// An assumedOccupancy is one launch whose plan assumed its kernel's
// resident blocks per SM (plan.Launch.BlocksPerSM): the grid read
// blocks_per_sm, or the spec's launch declares it. A sweep checks it
// against the driver before any launch (checkDeviceSymbols); ktune check
// computes it from the image without a GPU.
type assumedOccupancy struct {
	entry, where    string
	threads, shared int
	blocksPerSM     int
	declared        bool // the spec's blocks_per_sm, not --blocks-per-sm
}

// assume records a launch's assumed occupancy, each distinct one once.
func (k *KernelCheck) assume(a assumedOccupancy) {
	if !slices.Contains(k.assumed, a) {
		k.assumed = append(k.assumed, a)
	}
}

// checkOccupancy computes entry e's resident blocks per SM on sm from the
// image's registers and shared memory (occupancy.Blocks, CUDA's
// occupancy calculator) at its largest launch, and fails the kernel for
// an assumed occupancy that no reading of the image gives: the engine's
// host would size that grid, or that planned work, otherwise on the
// device. A prebuilt image's static shared memory may count the driver's
// 1 KiB reserve (nvcc 13's sections for FlashInfer's kernels do, where
// the driver reports 0): both readings are taken, and an assumption
// either gives passes. An architecture the package does not describe is
// a note, not a failure.
func (k *KernelCheck) checkOccupancy(e *EntryCheck, sm int) {
	arch, ok := occupancy.For(sm)
	if !ok {
		if slices.ContainsFunc(k.assumed, func(a assumedOccupancy) bool { return a.entry == e.Entry }) {
			k.Notes = append(k.Notes, fmt.Sprintf("%s: blocks_per_sm not checked: no SM figures for %s here (a sweep checks it on the device)", e.Entry, k.Arch))
		}
		return
	}
	readings := func(threads, shared int) (lo, hi occupancy.Result) {
		if threads < 1 {
			return occupancy.Result{Blocks: -1}, occupancy.Result{Blocks: -1}
		}
		static := []int{e.StaticShared}
		if k.Artifact != "" && arch.ReservedShared > 0 && e.StaticShared >= arch.ReservedShared {
			static = append(static, e.StaticShared-arch.ReservedShared)
		}
		lo.Blocks = -1
		for _, s := range static {
			r, err := occupancy.Blocks(arch, occupancy.Launch{Registers: e.Registers, StaticShared: s, Threads: threads, DynamicShared: shared})
			if err != nil {
				continue
			}
			if lo.Blocks < 0 || r.Blocks < lo.Blocks {
				lo = r
			}
			if r.Blocks >= hi.Blocks {
				hi = r
			}
		}
		return lo, hi
	}
	e.OccupancyLow, e.Occupancy = readings(e.Threads, e.DynamicShared)
	for _, a := range k.assumed {
		if a.entry != e.Entry {
			continue
		}
		lo, hi := readings(a.threads, a.shared)
		if lo.Blocks < 0 || (a.blocksPerSM >= lo.Blocks && a.blocksPerSM <= hi.Blocks) {
			continue
		}
		got := hi.String()
		if lo.Blocks != hi.Blocks {
			got = fmt.Sprintf("%d to %s (its static shared memory with or without the driver's reserve)", lo.Blocks, hi)
		}
		source := "plans with --blocks-per-sm " + fmt.Sprint(a.blocksPerSM)
		if a.declared {
			source = fmt.Sprintf("declares blocks_per_sm %d", a.blocksPerSM)
		}
		k.fail("%s: %s %s, but %d registers, %d B static + %d B dynamic shared memory and %d threads give %s on %s, by CUDA's occupancy calculator; the engine's host would size this launch's work from that (the device's answer, which a sweep checks, decides)",
			a.where, e.Entry, source, e.Registers, e.StaticShared, a.shared, a.threads, got, k.Arch)
	}
}
