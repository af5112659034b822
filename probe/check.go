package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/sass"
	"github.com/ktune/ktune/plan"
)

// Checking: every distinct kernel of a plan compiled for an architecture
// without a device (ktune check), through the sweep's own compile path:
// compileOptions, cacheKey and diskCache.obtain, so that a kernel check
// built is the CUBIN a sweep on that architecture loads, under the same
// key. What a device would have said at load time (registers, local
// memory, static shared memory, the __launch_bounds__ block size, whether
// an entry point exists) is read from the CUBIN itself (kernelcheck.go).

// CheckOptions configure Check.
type CheckOptions struct {
	// Arch is the architecture to build for, e.g. "sm_90"; a variant's
	// own -arch flag replaces it, as in a sweep, and it is part of every
	// key.
	Arch string
	// CacheDir is the CUBIN cache, as in Options: empty means the
	// default directory a sweep uses, "off" none.
	CacheDir string
	// Threads is how many compiles run at once; zero means GOMAXPROCS.
	Threads int
	// Log receives warnings (a cache that cannot be written); nil
	// discards them.
	Log io.Writer
	// Progress, when set, is called as each kernel's check ends, one call
	// at a time, with how many have ended of how many.
	Progress func(done, total int, k *KernelCheck)
}

// A CheckReport is what Check found.
type CheckReport struct {
	// NVRTC is the library that compiled and its version ("11.8").
	NVRTC, NVRTCVersion string
	// Disassembler is the cuobjdump or nvdisasm that read the SASS, empty
	// when none is installed.
	Disassembler string
	// Kernels are the distinct kernels in the order the plan first uses
	// them.
	Kernels []*KernelCheck
	// WallSeconds is the whole check's duration; CPUSeconds adds up the
	// NVRTC runs.
	WallSeconds, CPUSeconds float64
}

// Count returns how many kernels have each status.
func (r *CheckReport) Count() map[CheckStatus]int {
	n := map[CheckStatus]int{}
	for _, k := range r.Kernels {
		n[k.Status]++
	}
	return n
}

// A checkEnv is what check needs of the machine; tests pass fakes.
type checkEnv struct {
	cache   diskCache
	compile compileFunc
	version string // NVRTC's "major.minor", part of the key
	// unsupported says why an architecture cannot be built ("" if it
	// can): cuda.ArchSupport for the NVRTC found.
	unsupported func(arch string) string
	disasm      disassembler
	threads     int
	progress    func(done, total int, k *KernelCheck)
	warn        func(string, ...any)
	now         func() time.Time
}

// A CheckSet is the points of one spec's plan, named for the report.
type CheckSet struct {
	Name   string
	Points []*plan.Point
	// Where places a point's launch (by index) in its spec, as
	// file:line:col, for the parameter check's messages; nil: "launch N
	// of variant V".
	Where func(p *plan.Point, launch int) string
}

// Check compiles every distinct kernel of the sets' points (their bitwise
// twins included) once, across all the sets, opts.Threads at a time, and reads each CUBIN. An error
// means NVRTC could not be opened or run at all; a kernel that does not
// build is a KernelCheck with a failing status.
func Check(sets []CheckSet, opts CheckOptions) (*CheckReport, error) {
	if opts.Arch == "" {
		return nil, errors.New("checking: no architecture")
	}
	var cache diskCache
	switch opts.CacheDir {
	case "off":
	case "":
		dir, err := defaultCacheDir()
		if err != nil {
			return nil, fmt.Errorf("checking: %w", err)
		}
		cache.dir = dir
	default:
		cache.dir = opts.CacheDir
	}
	nv, err := cuda.OpenNVRTC()
	if err != nil {
		return nil, fmt.Errorf("checking: opening NVRTC: %w", err)
	}
	major, minor, err := nv.Version()
	if err != nil {
		return nil, fmt.Errorf("checking: reading the NVRTC version: %w", err)
	}
	sms, err := nv.SupportedArchs()
	if err != nil {
		return nil, fmt.Errorf("checking: reading NVRTC's architectures: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	var logMu sync.Mutex
	env := checkEnv{
		cache:   cache,
		compile: nv.CompileNamed,
		// The same version string as Backend.describe's, or no key
		// would match a sweep's.
		version:     fmt.Sprintf("%d.%d", major, minor),
		unsupported: func(arch string) string { return cuda.ArchSupport(arch, major, minor, sms) },
		disasm:      findDisassembler(),
		threads:     opts.Threads,
		progress:    opts.Progress,
		warn: func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintf(log, "check: "+format+"\n", args...)
		},
	}
	if tool, err := sass.Find(); err == nil {
		env.disasm = cachedDisassembler(env.disasm, tool, cache)
	}
	rep := check(sets, opts.Arch, env)
	rep.NVRTC = nv.Path()
	if env.disasm != nil {
		rep.Disassembler, _ = sass.Find()
	}
	return rep, nil
}

// check groups points into distinct kernels and builds them in parallel.
func check(sets []CheckSet, arch string, env checkEnv) *CheckReport {
	if env.now == nil {
		env.now = time.Now
	}
	threads := env.threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	ks := checkJobs(sets, arch, env.version)
	rep := &CheckReport{NVRTCVersion: env.version, Kernels: ks}
	start := env.now()
	queue := make(chan *KernelCheck, len(ks))
	for _, k := range ks {
		queue <- k
	}
	close(queue)
	var (
		wg     sync.WaitGroup
		doneMu sync.Mutex
		done   int
	)
	for range max(1, min(threads, len(ks))) {
		wg.Go(func() {
			for k := range queue {
				checkKernel(k, env)
				if env.progress != nil {
					doneMu.Lock()
					done++
					env.progress(done, len(ks), k)
					doneMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	rep.WallSeconds = env.now().Sub(start).Seconds()
	for _, k := range ks {
		if !k.Cached {
			rep.CPUSeconds += k.Seconds
		}
	}
	return rep
}

// checkJobs returns the distinct kernels of points, each point's before
// its bitwise twin's, in the order the points come. Kernels are the same
// when their cache keys are (prebuilt ones when their bytes are), as in
// compileJobs; each records the launches of every point that uses it, so
// that the largest block and shared memory are checked against the image.
func checkJobs(sets []CheckSet, arch, nvrtcVersion string) []*KernelCheck {
	var out []*KernelCheck
	byKey := map[string]*KernelCheck{}
	add := func(set CheckSet, p *plan.Point) {
		k := &KernelCheck{Source: p.Source.Name, Arch: arch, LoadsBeforeChain: -1, src: p.Source}
		switch {
		case p.Source.BuildFailed:
			k.Key, k.Artifact = "build-failed "+p.Source.BuildKey, p.Source.ArtifactKind
		case p.Source.Missing != "":
			k.Key, k.Artifact = "missing "+p.Source.Missing, p.Source.ArtifactKind
		case p.Source.ArtifactKind != "":
			k.Key, k.Artifact = "artifact-"+p.Source.ArtifactSHA256, p.Source.ArtifactKind
		default:
			k.Options = compileOptions(arch, p.Source.CompileDefines(p.Config.Defines), p.Flags)
			k.Key = cacheKey(p.Source, k.Options, arch, nvrtcVersion)
			k.Arch = targetArch(k.Options)
		}
		// A point that names other entries of the same image is a kernel
		// of its own, as in Backend.load.
		lkey := k.Key + "\x00" + strings.Join(entryPoints(p.Source), "\x00")
		if have, ok := byKey[lkey]; ok {
			k = have
		} else {
			byKey[lkey] = k
			out = append(out, k)
		}
		k.use(set.Name, p)
		k.declare(set, p)
		k.addLayouts(p)
	}
	// Each other file a step's launches come from is checked as a
	// prebuilt kernel of its own, for the launches taken from it.
	addModules := func(set CheckSet, p *plan.Point) {
		for _, m := range p.Source.Modules {
			q := *p
			q.Source = moduleSource(m)
			add(set, &q)
		}
	}
	for _, s := range sets {
		for _, p := range s.Points {
			add(s, p)
			addModules(s, p)
			if p.Twin != nil {
				add(s, p.Twin)
			}
		}
	}
	return out
}

// targetArch is the architecture compileOptions's options build for.
func targetArch(opts []string) string {
	for _, o := range opts {
		if isArchFlag(o) {
			if _, v, ok := strings.Cut(o, "="); ok {
				return v
			}
		}
	}
	return ""
}

// use records that point p of set runs kernel k: its variant and its launches.
func (k *KernelCheck) use(set string, p *plan.Point) {
	label := p.Config.Variant
	if set != "" {
		label = set + ": " + label
	}
	var ds []string
	for _, d := range p.Config.Defines {
		ds = append(ds, d.Name+"="+d.Value)
	}
	if len(ds) > 0 {
		label += " (" + strings.Join(ds, " ") + ")"
	}
	if !slices.Contains(k.Uses, label) {
		k.Uses = append(k.Uses, label)
	}
	if vb := (variantBudget{p.Config.Variant, p.Budget}); !p.Budget.IsZero() && !slices.Contains(k.budgetsOf, vb) {
		k.budgetsOf = append(k.budgetsOf, vb)
	}
	names := entryPoints(k.src)
	for _, l := range p.Launches {
		if slices.Contains(names, l.Entry) { // not one of another file's
			k.launch(l.Entry, threads(l.Block), l.Shared)
		}
	}
	if len(p.Launches) == 0 {
		for _, e := range entryPoints(p.Source) {
			k.launch(e, 0, 0)
		}
	}
}

// launch notes one launch of entry, keeping the largest block and
// dynamic shared memory seen.
func (k *KernelCheck) launch(entry string, threads, shared int) {
	for i := range k.Entries {
		if e := &k.Entries[i]; e.Entry == entry {
			e.Threads, e.DynamicShared = max(e.Threads, threads), max(e.DynamicShared, shared)
			return
		}
	}
	k.Entries = append(k.Entries, EntryCheck{Entry: entry, Threads: threads, DynamicShared: shared, Registers: -1})
}

// checkKernel builds one kernel (or reads its prebuilt image) and fills in
// what the image says.
func checkKernel(k *KernelCheck, env checkEnv) {
	k.Status = CheckBuilt
	switch {
	case k.src.BuildFailed:
		k.Status, k.Log = CheckFailed, strings.TrimSpace(k.src.BuildLog)
		k.Problems = append(k.Problems, "the engine's build failed (its output below)")
		return
	case k.src.EngineBuild && k.src.Missing != "":
		// Not checked, and not a pass: counted as unchecked.
		k.Status = CheckNoCompiler
		k.Problems = append(k.Problems, k.src.Missing)
		return
	case strings.HasPrefix(k.Key, "missing "):
		k.Status = CheckSkipped
		k.Problems = append(k.Problems, fmt.Sprintf("the prebuilt %s %s does not exist: a build output, made before a sweep", k.Artifact, k.src.Missing))
		return
	case k.Artifact != "":
		k.Cached = true
		k.readImage(k.src.Artifact, nil, env) // a C++-named entry maps through k.src.Symbols (symbolOf)
		k.checkLayouts(env)
		return
	}
	if why := env.unsupported(k.Arch); why != "" {
		k.Status = CheckUnsupported
		k.Problems = append(k.Problems, why)
		return
	}
	f, err := env.cache.obtain(context.Background(), k.Key, k.src, k.Options, env.compile, cacheWait{now: env.now}, env.warn)
	k.Log = strings.TrimSpace(f.log)
	k.Seconds = f.compileSec + f.waitSec
	k.Cached = f.origin != fromNVRTC
	switch {
	case err != nil:
		k.Status = CheckFailed
		k.Problems = append(k.Problems, err.Error())
	case f.rejected:
		k.Status = CheckFailed
		k.Problems = append(k.Problems, "NVRTC rejected the source (the log below says why)")
		if why := needsNewer(k.Log, env.version); why != "" {
			k.Status = CheckUnsupported
			k.Problems = append(k.Problems, why)
		}
		if h := headerHint(k.Log); h != "" {
			k.Status = CheckNoHeaders
			k.Problems = append(k.Problems, h)
		}
	default:
		k.readImage(f.cubin, f.lowered, env)
		k.checkLayouts(env)
	}
}

// BuildDir is the engine-build cache (plan.Override.BuildDir) beside the
// CUBIN cache a --cache flag names: "" for the default directory, "off"
// for none (then builds run into a fresh temporary directory).
func BuildDir(cache string) (string, error) {
	switch cache {
	case "off":
		return os.MkdirTemp("", "ktune-builds-")
	case "":
		dir, err := defaultCacheDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "builds"), nil
	}
	return filepath.Join(cache, "builds"), nil
}
