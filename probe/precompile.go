package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/plan"
)

// Precompiling: the sweep's parent process compiles every distinct kernel
// of the points about to run into the on-disk cache, several at a time on
// the CPU cores, while the workers measure on the GPU; a worker then finds
// its kernels in the cache, or waits for the one being compiled (see
// diskCache.obtain), instead of compiling them one by one on the
// measurement path.
//
// Concurrent compiles are safe: NVRTC's user guide (section "Thread
// Safety") allows concurrent calls as long as no two threads use the same
// nvrtcProgram at once, and cuda.NVRTC.Compile creates, compiles and
// destroys a program of its own per call, with its strings in an arena of
// its own. NVIDIA's own bindings rely on this (NVIDIA/cuda-python#624
// treats serialised NVRTC calls as a bug; NVIDIA/cccl#9998 serialises its
// clang-based JIT "while NVRTC is thread-safe"). Each compile holds a few
// hundred MB of host memory while it runs, which bounds Threads on a small
// host, not on a GPU server.

// PrecompileOptions configure StartPrecompile.
type PrecompileOptions struct {
	// Arch is the device's real architecture, e.g. "sm_90" (results.Env's
	// Arch): the CUBINs are for it alone, and it is part of their key.
	Arch string
	// CacheDir is the CUBIN cache, as in Options: empty means the default
	// directory that the workers use too. "off" is refused: the compiles
	// would have nowhere to go.
	CacheDir string
	// Threads is how many compiles run at once; zero means all cores but
	// two, which stay free for the measuring workers' host threads (a
	// descheduled host thread can outlast the stream blocker and drop a
	// sample).
	Threads int
	// Log receives warnings (a cache that cannot be written); nil discards
	// them.
	Log io.Writer
}

// A Precompiler compiles the kernels of a list of points in the
// background. Obtain one from StartPrecompile; Stop it when the sweep
// ends.
type Precompiler struct {
	jobs    []compileJob
	threads int
	now     func() time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed when every goroutine has returned

	mu    sync.Mutex
	start time.Time
	last  time.Time // end of the latest compile or wait
	stats plan.CompileStats
}

// A compileJob is one distinct kernel: a source and its NVRTC options.
type compileJob struct {
	key  string
	src  plan.Source
	opts []string
}

// compileJobs returns the distinct kernels of points, each point's before
// its bitwise twin's, in the order the points come: the order in which
// the workers will ask for them. Kernels are the same when their cache
// keys are, so points that differ only in nkv or shape share one job, and
// so do the twins of many points.
func compileJobs(points []*plan.Point, arch, nvrtcVersion string) []compileJob {
	var jobs []compileJob
	seen := map[string]bool{}
	add := func(p *plan.Point) {
		if p.Source.ArtifactKind != "" {
			return // prebuilt: loaded as it is
		}
		opts := compileOptions(arch, p.Source.CompileDefines(p.Config.Defines), p.Flags)
		key := cacheKey(p.Source, opts, arch, nvrtcVersion)
		if !seen[key] {
			seen[key] = true
			jobs = append(jobs, compileJob{key: key, src: p.Source, opts: opts})
		}
	}
	for _, p := range points {
		add(p)
		if p.Twin != nil {
			add(p.Twin)
		}
	}
	return jobs
}

// StartPrecompile opens NVRTC (no GPU context: the parent process leaves
// the devices to its workers) and starts compiling the kernels of points
// into the cache, in order, opts.Threads at a time.
func StartPrecompile(points []*plan.Point, opts PrecompileOptions) (*Precompiler, error) {
	if opts.Arch == "" {
		return nil, errors.New("precompiling: no architecture")
	}
	var cache diskCache
	switch opts.CacheDir {
	case "off":
		return nil, errors.New("precompiling: the CUBIN cache is off, so compiled kernels could not reach the workers")
	case "":
		dir, err := defaultCacheDir()
		if err != nil {
			return nil, fmt.Errorf("precompiling: %w", err)
		}
		cache.dir = dir
	default:
		cache.dir = opts.CacheDir
	}
	nv, err := cuda.OpenNVRTC()
	if err != nil {
		return nil, fmt.Errorf("precompiling: opening NVRTC: %w", err)
	}
	major, minor, err := nv.Version()
	if err != nil {
		return nil, fmt.Errorf("precompiling: reading the NVRTC version: %w", err)
	}
	// The same version string as Backend.describe's, or no key would match.
	jobs := compileJobs(points, opts.Arch, fmt.Sprintf("%d.%d", major, minor))
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	return startPrecompile(jobs, cache, nv.CompileNamed, opts.Threads, cacheWait{}, log), nil
}

// startPrecompile starts the goroutines over jobs; compile and the wait
// settings are injected so that tests can run without NVRTC.
func startPrecompile(jobs []compileJob, cache diskCache, compile compileFunc, threads int, w cacheWait, log io.Writer) *Precompiler {
	if threads <= 0 {
		threads = runtime.NumCPU() - 2
	}
	threads = max(1, min(threads, len(jobs)))
	if w.now == nil {
		w.now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Precompiler{jobs: jobs, threads: threads, now: w.now, cancel: cancel, done: make(chan struct{})}
	p.start = w.now()
	p.last = p.start
	p.stats = plan.CompileStats{Kernels: len(jobs), Pending: len(jobs), Threads: threads}
	var logMu sync.Mutex
	warn := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(log, "precompile: "+format+"\n", args...)
	}
	// One queue in plan order: the goroutines take the next job as they
	// free up, so the compiles stay just ahead of the measurements.
	queue := make(chan compileJob, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var wg sync.WaitGroup
	for range threads {
		wg.Go(func() {
			for j := range queue {
				if ctx.Err() != nil {
					return
				}
				f, err := cache.obtain(ctx, j.key, j.src, j.opts, compile, w, warn)
				if err != nil && ctx.Err() != nil {
					return // stopped while waiting: the job stays pending
				}
				if err != nil {
					// NVRTC could not run at all; the worker that needs
					// this kernel will meet the same error and record it.
					warn("%v", err)
				}
				p.count(f, err)
			}
		})
	}
	go func() {
		wg.Wait()
		close(p.done)
	}()
	return p
}

// count adds one finished job to the statistics.
func (p *Precompiler) count(f fetched, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.stats
	s.Pending--
	switch {
	case err != nil, f.rejected:
		s.Rejected++
	case f.origin == fromNVRTC:
		s.Compiled++
	case f.origin == fromOther:
		s.Elsewhere++
	default:
		s.Cached++
	}
	if f.origin == fromNVRTC {
		s.CPUSeconds += f.compileSec
	}
	if t := p.now(); t.After(p.last) {
		p.last = t
	}
	s.WallSeconds = p.last.Sub(p.start).Seconds()
}

// Wait blocks until every job is done and returns the statistics.
func (p *Precompiler) Wait() plan.CompileStats {
	<-p.done
	return p.Stats()
}

// Stop drops the jobs not yet started, waits for the compiles in flight
// (an NVRTC call cannot be interrupted; letting it finish also releases
// its claim and caches its CUBIN for the next run) and returns the
// statistics, the dropped jobs counted as Pending.
func (p *Precompiler) Stop() plan.CompileStats {
	p.cancel()
	return p.Wait()
}

// Stats returns the statistics so far.
func (p *Precompiler) Stats() plan.CompileStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}
