package sweep

import (
	"context"
	"testing"

	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// TestRunPrecompile: the hook gets the points that will run, in order,
// before the first one starts; its stop function runs after the last one
// and its statistics land in the Summary.
func TestRunPrecompile(t *testing.T) {
	pl := testPlan(6)
	e := newRunEnv(t)
	first := e.opts()
	first.Filter = func(p *plan.Point) bool { return p.Index < 2 }
	if _, err := Run(context.Background(), replay.New(recordsFor(pl)), pl, first); err != nil {
		t.Fatal(err)
	}

	rp := replay.New(recordsFor(pl))
	var got []string
	var callsAtStart, callsAtStop, stops int
	want := plan.CompileStats{Kernels: 2, Compiled: 1, Cached: 1, CPUSeconds: 2.5, WallSeconds: 1.5, Threads: 16}
	opts := e.opts()
	opts.Precompile = func(todo []*plan.Point) func() plan.CompileStats {
		for _, p := range todo {
			got = append(got, p.Hash)
		}
		callsAtStart = len(rp.Calls())
		return func() plan.CompileStats {
			stops++
			callsAtStop = len(rp.Calls())
			return want
		}
	}
	sum, err := Run(context.Background(), rp, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "points given to the precompiler", got, planHashes(pl, 2, 3, 4, 5))
	if callsAtStart != 0 || callsAtStop != 4 || stops != 1 {
		t.Errorf("precompiler started after %d points, stopped %d times after %d; want 0, 1, 4", callsAtStart, stops, callsAtStop)
	}
	if sum.Compile != want {
		t.Errorf("summary compile %+v, want %+v", sum.Compile, want)
	}

	// Nothing left to run: nothing to compile either.
	opts.Precompile = func([]*plan.Point) func() plan.CompileStats {
		t.Error("precompiler started with no point to run")
		return func() plan.CompileStats { return plan.CompileStats{} }
	}
	if sum, err := Run(context.Background(), replay.New(nil), pl, opts); err != nil || sum.Compile != (plan.CompileStats{}) {
		t.Errorf("second run: %+v, %v", sum.Compile, err)
	}
}

func TestCompileStatsString(t *testing.T) {
	for _, tc := range []struct {
		s    plan.CompileStats
		want string
	}{
		{plan.CompileStats{Kernels: 31, Compiled: 24, Cached: 7, CPUSeconds: 3.14, WallSeconds: 1.23, Threads: 16},
			"31 kernels: 24 compiled (3.1 s CPU, 1.2 s wall, 16 threads), 7 from cache"},
		// A warm cache: no compile, so no times.
		{plan.CompileStats{Kernels: 31, Cached: 31, WallSeconds: 0.01, Threads: 16},
			"31 kernels: 0 compiled, 31 from cache"},
		{plan.CompileStats{Kernels: 9, Compiled: 3, Cached: 1, Elsewhere: 2, Rejected: 1, Pending: 2, CPUSeconds: 4, WallSeconds: 2, Threads: 1},
			"9 kernels: 3 compiled (4.0 s CPU, 2.0 s wall, 1 thread), 1 from cache, 2 compiled by another process, 1 rejected by NVRTC, 2 not reached"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.s, got, tc.want)
		}
	}
}
