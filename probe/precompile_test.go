package probe

import (
	"context"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// point makes a plan point of variant v with the given SPLITS and nkv.
func point(v, text string, splits, nkv int) *plan.Point {
	return &plan.Point{
		Config: results.Config{Variant: v, NKV: nkv, Defines: []abi.Define{
			{Name: "HEAD_DIM", Value: "128"}, {Name: "SPLITS", Value: strconv.Itoa(splits)}}},
		Source: plan.Source{Name: v + ".cu", Text: text},
		Flags:  []string{"-lineinfo"},
	}
}

func TestCompileJobsDedup(t *testing.T) {
	r4a := point("r4", "r4 text", 32, 1024)
	r4b := point("r4", "r4 text", 32, 8192) // same kernel, another nkv
	r4c := point("r4", "r4 text", 64, 1024)
	d2a := point("d2", "d2 text", 32, 1024)
	d2a.Twin = point("r4", "r4 text", 32, 1024) // the twin is r4a's kernel
	d2b := point("d2", "d2 text", 64, 1024)
	d2b.Twin = point("r4", "r4 text", 64, 1024)
	d2c := point("d2", "d2 text", 16, 1024)
	d2c.Twin = point("r4", "r4 text", 16, 1024) // a twin kernel no point has
	// A source that differs only in its flags is another kernel.
	r4fast := point("r4", "r4 text", 32, 1024)
	r4fast.Flags = []string{"-lineinfo", "-use_fast_math"}

	jobs := compileJobs([]*plan.Point{d2a, r4a, r4b, r4c, d2b, d2c, r4fast}, "sm_90", "13.0")
	var got []string
	keys := map[string]bool{}
	for _, j := range jobs {
		s, _ := (&results.Config{Defines: definesOf(j.opts)}).Define("SPLITS")
		got = append(got, j.src.Name+"/"+s+"/"+j.opts[len(j.opts)-1])
		if keys[j.key] {
			t.Errorf("key %s listed twice", j.key[:12])
		}
		keys[j.key] = true
		if want := cacheKey(j.src, j.opts, "sm_90", "13.0"); j.key != want {
			t.Errorf("%s: key %s is not the cache key of its source and options", j.src.Name, j.key[:12])
		}
	}
	// Plan order, each point's kernel before its twin's.
	want := []string{
		"d2.cu/32/-lineinfo", "r4.cu/32/-lineinfo", "r4.cu/64/-lineinfo", "d2.cu/64/-lineinfo",
		"d2.cu/16/-lineinfo", "r4.cu/16/-lineinfo", "r4.cu/32/-use_fast_math",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jobs\n got %q\nwant %q", got, want)
	}
	// The options are exactly those a Backend compiles the point with.
	if o := compileOptions("sm_90", r4a.Config.Defines, r4a.Flags); !slices.Equal(jobs[1].opts, o) {
		t.Errorf("options %q, the backend's %q", jobs[1].opts, o)
	}
}

// definesOf reads the -D options back, for the test's labels.
func definesOf(opts []string) []abi.Define {
	var ds []abi.Define
	for _, o := range opts {
		if len(o) > 2 && o[:2] == "-D" {
			for i := 2; i < len(o); i++ {
				if o[i] == '=' {
					ds = append(ds, abi.Define{Name: o[2:i], Value: o[i+1:]})
					break
				}
			}
		}
	}
	return ds
}

// stepClock is a clock that advances by one second at each reading, under
// a lock: with one compile thread, every duration is a count of readings.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func jobsOf(t *testing.T, texts ...string) []compileJob {
	var ps []*plan.Point
	for i, s := range texts {
		ps = append(ps, point("v", s, i+1, 1024))
	}
	return compileJobs(ps, "sm_90", "13.0")
}

// TestPrecompileStats checks the counts and times on one thread with a
// clock that ticks once per reading: each compile reads it twice (one
// second of CPU), the precompiler once at its start and once per job.
func TestPrecompileStats(t *testing.T) {
	c := diskCache{dir: t.TempDir()}
	jobs := jobsOf(t, "a", "b", "bad", "c", "d")
	// Two kernels are in the cache already.
	for _, j := range []compileJob{jobs[1], jobs[3]} {
		if err := c.put(j.key, []byte("old"), "", nil); err != nil {
			t.Fatal(err)
		}
	}
	var nv fakeNVRTC
	clk := &stepClock{}
	pc := startPrecompile(jobs, c, nv.compile, 1, cacheWait{now: clk.now}, io.Discard)
	got := pc.Wait()
	want := plan.CompileStats{Kernels: 5, Compiled: 2, Cached: 2, Rejected: 1, Threads: 1,
		// Three NVRTC runs (a, bad, d) of one tick each.
		CPUSeconds: 3,
		// Readings: start (1); a: obtain start, compile ×2, count (2–5);
		// b: obtain start, count (6–7); bad: 8–11; c: 12–13; d: 14–17.
		WallSeconds: 16}
	if got != want {
		t.Errorf("stats\n got %+v\nwant %+v", got, want)
	}
	if n := nv.calls.Load(); n != 3 {
		t.Errorf("%d NVRTC runs, want 3", n)
	}
	// A second run over a warm cache compiles nothing (the rejected
	// source is not cached: it is tried again, and rejected again).
	nv2 := fakeNVRTC{}
	s2 := startPrecompile(jobs, c, nv2.compile, 4, cacheWait{}, io.Discard).Wait()
	if s2.Compiled != 0 || s2.Cached != 4 || s2.Rejected != 1 || s2.Pending != 0 || nv2.calls.Load() != 1 {
		t.Errorf("warm run: %+v, %d NVRTC runs", s2, nv2.calls.Load())
	}
	if s := (plan.CompileStats{Kernels: 4, Cached: 4}).String(); s != "4 kernels: 0 compiled, 4 from cache" {
		t.Errorf("warm line %q", s)
	}
}

func TestPrecompileParallel(t *testing.T) {
	jobs := jobsOf(t, "a", "b", "c", "d", "e", "f", "g", "h")
	nv := fakeNVRTC{delay: 20 * time.Millisecond}
	s := startPrecompile(jobs, diskCache{dir: t.TempDir()}, nv.compile, 4, cacheWait{}, io.Discard).Wait()
	if s.Compiled != 8 || s.Threads != 4 {
		t.Errorf("stats %+v", s)
	}
	if p := nv.peak.Load(); p < 2 || p > 4 {
		t.Errorf("at most %d compiles ran at once; want 2 to 4 of the 4 threads", p)
	}
	// Sleeping compiles overlap: the CPU sum exceeds the wall time.
	if s.CPUSeconds <= s.WallSeconds {
		t.Errorf("CPU %.3fs, wall %.3fs: the compiles did not overlap", s.CPUSeconds, s.WallSeconds)
	}
	// More threads than jobs are not started.
	if s := startPrecompile(jobs[:2], diskCache{dir: t.TempDir()}, nv.compile, 16, cacheWait{}, io.Discard).Wait(); s.Threads != 2 {
		t.Errorf("threads %d for 2 jobs", s.Threads)
	}
}

// TestPrecompileHandOff plays a worker against the precompiler on one
// cache: the worker asks for the kernel the precompiler is compiling and
// gets that CUBIN without compiling; the precompiler, reaching a kernel
// the worker claimed first, waits for it and counts it as compiled
// elsewhere.
func TestPrecompileHandOff(t *testing.T) {
	c := diskCache{dir: t.TempDir()}
	jobs := jobsOf(t, "a", "b")
	// The worker holds b's claim before the precompiler starts.
	release, held, err := c.claim(jobs[1].key, time.Now, time.Hour)
	if err != nil || !held {
		t.Fatal(held, err)
	}
	pre := fakeNVRTC{gate: make(chan struct{})}
	pc := startPrecompile(jobs, c, pre.compile, 2, cacheWait{poll: time.Millisecond}, io.Discard)
	for pre.running.Load() == 0 {
		time.Sleep(time.Millisecond)
	}

	// The worker wants a, which the precompiler is compiling right now.
	var worker fakeNVRTC
	type result struct {
		f   fetched
		err error
	}
	got := make(chan result, 1)
	go func() {
		f, err := c.obtain(context.Background(), jobs[0].key, jobs[0].src, jobs[0].opts, worker.compile,
			cacheWait{poll: time.Millisecond}, noWarn(t))
		got <- result{f, err}
	}()
	time.Sleep(20 * time.Millisecond)
	if pre.calls.Load() != 1 {
		t.Fatalf("the precompiler ran %d compiles, want 1 (b is claimed by the worker)", pre.calls.Load())
	}
	close(pre.gate) // the precompiler's compile of a finishes
	r := <-got
	if r.err != nil || r.f.origin != fromOther || string(r.f.cubin) != "cubin:"+strings.Join(jobs[0].opts, " ") {
		t.Errorf("worker's a: %+v, %v", r.f, r.err)
	}
	if worker.calls.Load() != 0 {
		t.Error("the worker compiled a kernel the precompiler was compiling")
	}

	// The worker finishes b; the precompiler, waiting on it, counts it.
	if st := pc.Stats(); st.Pending != 1 {
		t.Errorf("before the worker's b: %+v", st)
	}
	if err := c.put(jobs[1].key, []byte("worker's b"), "", nil); err != nil {
		t.Fatal(err)
	}
	release()
	s := pc.Wait()
	if s.Kernels != 2 || s.Compiled != 1 || s.Elsewhere != 1 || s.Cached != 0 || s.Pending != 0 {
		t.Errorf("stats %+v", s)
	}
	if pre.calls.Load() != 1 {
		t.Errorf("the precompiler compiled b too (%d compiles)", pre.calls.Load())
	}
}

// TestPrecompileStop: Stop drops the jobs not started, lets the one in
// flight finish and counts the rest as pending.
func TestPrecompileStop(t *testing.T) {
	c := diskCache{dir: t.TempDir()}
	jobs := jobsOf(t, "a", "b", "c", "d")
	nv := fakeNVRTC{gate: make(chan struct{})}
	pc := startPrecompile(jobs, c, nv.compile, 1, cacheWait{}, io.Discard)
	for nv.running.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan plan.CompileStats)
	go func() { done <- pc.Stop() }()
	time.Sleep(10 * time.Millisecond)
	close(nv.gate)
	s := <-done
	if s.Compiled != 1 || s.Pending != 3 || nv.calls.Load() != 1 {
		t.Errorf("stats %+v after %d compiles", s, nv.calls.Load())
	}
	if _, _, _, ok := c.get(jobs[0].key); !ok {
		t.Error("the compile in flight at Stop was not cached")
	}
}
