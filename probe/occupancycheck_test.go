package probe

import (
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/occupancy"
	"github.com/ktune/ktune/plan"
)

// TestCheckOccupancy: ktune check computes each entry's resident blocks
// per SM from the image and fails a launch whose assumed blocks_per_sm
// (declared by the spec's launch, or given by --blocks-per-sm) it does not
// give, at the launch's place, saying where the assumption came from.
func TestCheckOccupancy(t *testing.T) {
	img := smallCUBIN(t)
	// plain: 8 registers, no shared memory; 32 threads: 32 blocks an SM on
	// sm_90, bound by the resident-block limit.
	pt := func(v string, bps int, declared bool) *plan.Point {
		p := withLaunches(point(v, "", 32, 1024), 32, 0, "plain")
		p.Launches[0].BlocksPerSM, p.Launches[0].BlocksPerSMDeclared = bps, declared
		return p
	}
	calls := 0
	rep := check([]CheckSet{
		{Points: []*plan.Point{pt("right", 32, true)}},
		{Points: []*plan.Point{pt("wrong-spec", 16, true)}},
		{Points: []*plan.Point{pt("wrong-flag", 12, false)}},
		{Points: []*plan.Point{pt("none", 0, false)}},
	}, "sm_90", fakeCheckEnv(img, nil, &calls))
	want := []string{
		"",
		"launch 0 of variant wrong-spec: plain declares blocks_per_sm 16, but 8 registers, 0 B static + 0 B dynamic shared memory and 32 threads give 32 blocks per SM (blocks) on sm_90",
		"plain plans with --blocks-per-sm 12, but",
		"",
	}
	if len(rep.Kernels) != len(want) {
		t.Fatalf("%d kernels, want %d", len(rep.Kernels), len(want))
	}
	for i, k := range rep.Kernels {
		p := strings.Join(k.Problems, "; ")
		if (want[i] == "") != (k.Status == CheckBuilt) || !strings.Contains(p, want[i]) {
			t.Errorf("%v: %s %q, want the problem %q", k.Uses, k.Status, p, want[i])
		}
		if e := k.Entries[0]; e.Occupancy != (occupancy.Result{Blocks: 32, Limiter: occupancy.ByBlocks}) {
			t.Errorf("%v: occupancy %v, want 32 (blocks)", k.Uses, e.Occupancy)
		}
	}
}

// TestCheckOccupancyPrebuiltReserve: a prebuilt CUBIN's static shared
// memory may count the driver's 1 KiB reserve, so both readings are
// right until the device says: 21120 B is 11 blocks in 228 KiB, or 10
// with the reserve added again; 10 and 11 pass, 12 fails naming both.
func TestCheckOccupancyPrebuiltReserve(t *testing.T) {
	for _, c := range []struct {
		bps  int
		fail bool
	}{{10, false}, {11, false}, {12, true}, {9, true}} {
		k := &KernelCheck{Arch: "sm_90", Artifact: "cubin"}
		e := &EntryCheck{Entry: "k", Known: true, Registers: 32, StaticShared: 21120, Threads: 32}
		k.assume(assumedOccupancy{entry: "k", where: "launch 0 of variant v", threads: 32, blocksPerSM: c.bps, declared: true})
		k.checkOccupancy(e, 90)
		if e.OccupancyLow.Blocks != 10 || e.Occupancy.Blocks != 11 {
			t.Fatalf("readings %v and %v, want 10 and 11", e.OccupancyLow, e.Occupancy)
		}
		p := strings.Join(k.Problems, "; ")
		if (p != "") != c.fail {
			t.Errorf("blocks_per_sm %d: problems %q, want a failure: %v", c.bps, p, c.fail)
		}
		if c.fail && !strings.Contains(p, "give 10 to 11 blocks per SM (shared memory) (its static shared memory with or without the driver's reserve)") {
			t.Errorf("blocks_per_sm %d: %q does not name both readings", c.bps, p)
		}
	}
	// A CUBIN NVRTC built here has one reading (its static bytes, the
	// reserve added): 10, so 11 fails.
	k := &KernelCheck{Arch: "sm_90"}
	e := &EntryCheck{Entry: "k", Known: true, Registers: 32, StaticShared: 21120, Threads: 32}
	k.assume(assumedOccupancy{entry: "k", where: "w", threads: 32, blocksPerSM: 11})
	k.checkOccupancy(e, 90)
	if len(k.Problems) != 1 {
		t.Errorf("an NVRTC image read two ways: %q", k.Problems)
	}
}

// TestCheckOccupancyUnknownArch: an architecture without SM figures
// leaves the assumption to the device, and says so.
func TestCheckOccupancyUnknownArch(t *testing.T) {
	k := &KernelCheck{Arch: "sm_75"}
	e := &EntryCheck{Entry: "k", Known: true, Registers: 32, Threads: 32}
	k.assume(assumedOccupancy{entry: "k", where: "w", threads: 32, blocksPerSM: 3, declared: true})
	k.checkOccupancy(e, 75)
	if len(k.Problems) != 0 || !strings.Contains(strings.Join(k.Notes, ";"), "blocks_per_sm not checked: no SM figures for sm_75") {
		t.Errorf("problems %q, notes %q", k.Problems, k.Notes)
	}
}
