package plan

import "fmt"

// CompileStats count the kernel builds of a run: each distinct kernel
// (source, defines, flags, architecture) that its points and their twins
// need, counted once.
type CompileStats struct {
	Kernels  int // distinct kernels of the points run
	Compiled int // compiled by the precompiler
	Cached   int // in the on-disk cache before the run asked for them
	// Elsewhere were compiled by another process (a worker that reached
	// the kernel first, another sweep sharing the cache) while the
	// precompiler waited for them.
	Elsewhere int
	// Rejected: NVRTC refused the source (the point's record has the log)
	// or could not run at all.
	Rejected int
	Pending  int // not reached: the run ended first
	// CPUSeconds is the sum of the precompiler's NVRTC run times, rejected
	// sources included; WallSeconds is the time from its start to its last
	// compile's end; Threads is how many compiles it ran at once.
	CPUSeconds  float64
	WallSeconds float64
	Threads     int
}

// String renders the statistics as the sweep's last line prints them,
// e.g. "31 kernels: 24 compiled (3.1 s CPU, 1.2 s wall, 16 threads), 7
// from cache".
func (s CompileStats) String() string {
	out := fmt.Sprintf("%d kernels: %d compiled", s.Kernels, s.Compiled)
	if s.Compiled+s.Rejected > 0 {
		threads := "threads"
		if s.Threads == 1 {
			threads = "thread"
		}
		out += fmt.Sprintf(" (%.1f s CPU, %.1f s wall, %d %s)", s.CPUSeconds, s.WallSeconds, s.Threads, threads)
	}
	out += fmt.Sprintf(", %d from cache", s.Cached)
	for _, x := range []struct {
		n    int
		what string
	}{{s.Elsewhere, "compiled by another process"}, {s.Rejected, "rejected by NVRTC"}, {s.Pending, "not reached"}} {
		if x.n > 0 {
			out += fmt.Sprintf(", %d %s", x.n, x.what)
		}
	}
	return out
}
