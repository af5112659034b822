package probe

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A kernelPair is one loaded build of a variant: the functions of its
// entry points, kept loaded for every point that shares the image. The
// name stays from the ABI's partial + combine pair; a build may have any
// number of entry points (kernels/ABI.md, "Engine kernels").
type kernelPair struct {
	mod *cuda.Module
	// others are the modules of the step's other files (modules.go), in
	// the order of the Source's Modules.
	others []*cuda.Module
	// fns holds the functions by entry as the point's launches name them
	// (a name expression maps to the function of its lowered symbol).
	fns       map[string]*cuda.Function
	build     *build
	resources []results.Resource
	// loadsBeforeChain is the SASS count for Resource.LoadsBeforeChain of
	// the first entry point, -1 when no disassembler was available.
	loadsBeforeChain int
	// params are the parameters of each entry as the driver reports them
	// (cuFuncGetParamInfo), absent for an entry the driver cannot report:
	// what the launches' declared arguments are checked against
	// (checkParams) before any launch.
	params map[string][]abi.ParamSlot
}

// A geometry is how a point's launches run: the plan's launches, with the
// first launch's grid kept apart in grid because the gates may replace it
// at another context length (geometryAt) for a kernel whose grid reads
// nkv. block and shared are the first launch's too, cgrid and cblock the
// second's, for messages and tests.
type geometry struct {
	grid, block, cgrid, cblock [3]int
	shared                     int
	steps                      []plan.Launch
	// nkv is the length the launches' arguments are evaluated at, for a
	// kernel launched fresh every step whose arguments read it
	// (plan.Geometry.Args); 0 for every other kernel.
	nkv int
}

// pointGeometry is the geometry of a point as its plan resolved it: the
// plan is the one home of every launch, the ABI's default included.
func pointGeometry(p *plan.Point) geometry {
	g := geometry{steps: p.Launches}
	if len(p.Launches) > 0 {
		g.grid, g.block, g.shared = p.Launches[0].Grid, p.Launches[0].Block, p.Launches[0].Shared
	}
	if len(p.Launches) > 1 {
		g.cgrid, g.cblock = p.Launches[1].Grid, p.Launches[1].Block
	}
	if p.Geometry != nil && p.Geometry.Args {
		g.nkv = p.Config.NKV
	}
	return g
}

func threads(b [3]int) int { return b[0] * b[1] * b[2] }

// load compiles (or finds in the caches) and loads the kernels of src
// built with the configuration's defines; a prebuilt artifact is loaded as
// it is. A nil pair with a nil error means NVRTC rejected the source; the
// build then carries the log.
func (b *Backend) load(src plan.Source, c *results.Config, flags []string) (*kernelPair, *build, error) {
	k, bld, err := b.loadOne(src, c, flags)
	if k == nil || err != nil {
		return k, bld, err
	}
	k, err = b.loadModules(src, c, k)
	return k, bld, err
}

// loadOne loads the variant's own kernel of src (load adds its other
// files).
func (b *Backend) loadOne(src plan.Source, c *results.Config, flags []string) (*kernelPair, *build, error) {
	opts := compileOptions(b.arch, src.CompileDefines(c.Defines), flags)
	key := cacheKey(src, opts, b.arch, b.nvrtcVersion)
	if src.BuildFailed { // the engine's own build (plan/build.go), its output recorded
		return nil, &build{record: results.Compile{Log: src.BuildLog}}, failPoint(results.StatusCompileFailed, "the engine's build of %s failed; its output is in compile.log", src.Name)
	}
	if src.Missing != "" {
		return nil, nil, failPoint(results.StatusError, "the build output %s did not exist when the plan was made: build it, then run the point again", src.Missing)
	}
	for _, m := range src.Modules {
		if m.Missing {
			return nil, nil, failPoint(results.StatusError, "the prebuilt %s %s did not exist when the plan was made: build it, then run the point again", m.Kind, m.Path)
		}
	}
	if src.ArtifactKind != "" {
		key = "artifact-" + src.ArtifactSHA256
	}
	// One image serves every point that names the same entries in it; a
	// point that names others gets its own load of the image.
	lkey := key + "\x00" + strings.Join(entryPoints(src), "\x00")
	if k, ok := b.loaded[lkey]; ok {
		// The record says "cached": this point paid no compile.
		rec := *k.build
		rec.record.Cached, rec.record.Seconds = true, 0
		return k, &rec, nil
	}
	var bld *build
	if src.ArtifactKind != "" {
		bld = &build{key: key, cubin: src.Artifact, record: results.Compile{Cached: true, Artifact: src.ArtifactKind + " sha256:" + src.ArtifactSHA256, Symbols: src.Symbols}}
	} else {
		var err error
		if bld, err = b.compile(src, opts); err != nil {
			return nil, nil, err
		}
		if bld.failed {
			return nil, bld, nil
		}
	}
	mod, err := b.ctx.LoadImage(bld.cubin)
	if err != nil {
		return nil, bld, fmt.Errorf("loading the module of %s: %w", src.Name, err)
	}
	k := &kernelPair{mod: mod, build: bld, fns: map[string]*cuda.Function{}, params: map[string][]abi.ParamSlot{}}
	names := entryPoints(src)
	for _, entry := range names {
		sym := symbolOf(src, bld.lowered, entry)
		if sym == "" {
			mod.Unload()
			return nil, bld, fmt.Errorf("NVRTC resolved no symbol for the name expression %q of %s", entry, src.Name)
		}
		if k.fns[entry], err = mod.Function(sym); err != nil {
			mod.Unload()
			return nil, bld, fmt.Errorf("finding %s in %s: %w", entry, src.Name, err)
		}
		switch ps, err := k.fns[entry].Params(); {
		case err == nil:
			for _, p := range ps {
				k.params[entry] = append(k.params[entry], abi.ParamSlot{Offset: p.Offset, Size: p.Size})
			}
		case !errors.Is(err, cuda.ErrNoParamInfo):
			mod.Unload()
			return nil, bld, fmt.Errorf("reading the parameters of %s in %s: %w", entry, src.Name, err)
		}
	}
	b.loaded[lkey] = k
	if b.opts.SASSDir != "" && src.ArtifactKind == "" {
		b.keep(c.Variant, key, ".cubin", bld.cubin)
	}
	if src.ArtifactKind == "" || cuda.Kind(src.Artifact) == cuda.ImageCUBIN {
		first := symbolOf(src, bld.lowered, names[0])
		b.inspect(k, c.Variant, key, first)
	} else {
		k.loadsBeforeChain = -1 // PTX is compiled by the driver: no CUBIN to read
	}
	return k, bld, nil
}

// symbolOf is the symbol an entry of src has in its image: NVRTC's
// lowered name of a name expression, the symbol the plan found for a
// prebuilt artifact's C++-named entry (plan.Source.Symbols), else the
// entry itself; "" for a name expression NVRTC resolved to none.
func symbolOf(src plan.Source, lowered map[string]string, entry string) string {
	if src.Named {
		return lowered[entry]
	}
	if sym, ok := src.Symbols[entry]; ok {
		return sym
	}
	return entry
}

// entryPoints names the functions to look up in a build of src: each
// entry of its launches once, in launch order; for a Source that names
// none (not built by a plan), the ABI's partial and combine.
func entryPoints(src plan.Source) []string {
	if len(src.Entries) > 0 {
		return src.Entries
	}
	partial, combine := src.Partial, src.Combine
	if partial == "" {
		partial = "attn_partial"
	}
	if src.Fused {
		return []string{partial}
	}
	if combine == "" {
		combine = "attn_combine"
	}
	return []string{partial, combine}
}

// artefactName is <variant>-<first 16 hex digits of the key><ext>, the
// variant name made safe for a file name.
func artefactName(variant, key, ext string) string {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == ' ' {
			return '_'
		}
		return r
	}, variant)
	return fmt.Sprintf("%s-%s%s", name, key[:16], ext)
}

// resources reads the compiled footprint of every launch's entry point
// for the launch geometry g. Dynamic shared memory above the default 48 KiB
// limit, and a cluster above the portable size, are opted into here, once
// per pair, before any launch. MaxBlocksPerSM and Occupancy are for a
// plain launch: a cluster launch, whose blocks must be placed together,
// may have fewer resident at once (cuOccupancyMaxActiveClusters would
// say; it is not asked).
func (b *Backend) resources(k *kernelPair, g geometry) ([]results.Resource, error) {
	var out []results.Resource
	for i, l := range g.steps {
		f := k.fns[l.Entry]
		if f == nil {
			return nil, fmt.Errorf("launch %d: entry %s was not loaded", i, l.Entry)
		}
		name := l.Entry
		if l.Shared > 48<<10 {
			if err := f.SetMaxDynamicShared(l.Shared); err != nil {
				return nil, fmt.Errorf("allowing %d bytes of dynamic shared memory for %s: %w", l.Shared, name, err)
			}
		}
		if l.NonPortableCluster() {
			if err := f.AllowNonPortableClusterSize(); err != nil {
				return nil, fmt.Errorf("allowing the %v cluster of %s: %w", l.Cluster, name, err)
			}
		}
		r := results.Resource{Kernel: name, DynamicShared: l.Shared, LoadsBeforeChain: -1}
		if i == 0 {
			r.LoadsBeforeChain = k.loadsBeforeChain
		}
		var err error
		if r.Registers, err = f.Attr(cuda.FuncNumRegs); err != nil {
			return nil, fmt.Errorf("reading the registers of %s: %w", name, err)
		}
		if r.LocalBytes, err = f.Attr(cuda.FuncLocalSizeBytes); err != nil {
			return nil, fmt.Errorf("reading the local memory of %s: %w", name, err)
		}
		if r.StaticShared, err = f.Attr(cuda.FuncSharedSizeBytes); err != nil {
			return nil, fmt.Errorf("reading the shared memory of %s: %w", name, err)
		}
		if r.MaxBlocksPerSM, err = f.MaxActiveBlocksPerSM(threads(l.Block), l.Shared); err != nil {
			return nil, fmt.Errorf("computing the occupancy of %s: %w", name, err)
		}
		r.Occupancy = threadShare(r.MaxBlocksPerSM, threads(l.Block), b.maxThreadsPerSM)
		out = append(out, r)
	}
	return out, nil
}

// threadShare is the theoretical share of an SM's thread slots that resident
// blocks fill.
func threadShare(blocks, threads, maxThreads int) float64 {
	if maxThreads <= 0 {
		return 0
	}
	return math.Min(1, float64(blocks*threads)/float64(maxThreads))
}

// A launch is one kernel launch of a pair, arguments included.
type launch struct {
	fn          *cuda.Function
	name        string // the entry, for messages
	grid, block [3]int
	shared      int
	args        []any
	attrs       cuda.LaunchAttrs
}

// launches lists the launches of one point's step, in stream order, each
// with its arguments marshalled from its signature (marshal.go). Every
// launch path (gates, probes, graph capture, replay) goes through it, for
// the ABI's kernels and an engine's alike.
func launches(k *kernelPair, c *results.Config, g geometry, w *workspace, enc tensorMapEncoder) ([]launch, error) {
	out := make([]launch, len(g.steps))
	for i, l := range g.steps {
		args, err := marshal(l.Args, c.Shape, c.Defines, g.nkv, w, enc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.Entry, err)
		}
		out[i] = launch{k.fns[l.Entry], l.Entry, l.Grid, l.Block, l.Shared, args, launchAttrs(l)}
	}
	if len(out) > 0 {
		out[0].grid = g.grid // geometryAt's grid for a kernel that reads nkv
	}
	return out, nil
}

// launchAttrs are the launch attributes of one of the plan's launches:
// programmatic serialization (pdl) and the thread-block cluster.
func launchAttrs(l plan.Launch) cuda.LaunchAttrs {
	return cuda.LaunchAttrs{Programmatic: l.Programmatic, Cluster: l.Cluster}
}

// launchPair enqueues one step (launches) on the backend's stream.
func (b *Backend) launchPair(k *kernelPair, c *results.Config, g geometry, w *workspace) error {
	ls, err := launches(k, c, g, w, cudaDevice{b}.encodeTensorMap)
	if err != nil {
		return fmt.Errorf("marshalling the arguments of %s: %w", c.Variant, err)
	}
	if len(ls) == 0 {
		return fmt.Errorf("%s: the point has no launches (not built by a plan)", c.Variant)
	}
	for _, l := range ls {
		if l.fn == nil {
			return fmt.Errorf("launching %s %s: entry not loaded", c.Variant, l.name)
		}
		if err := b.ctx.LaunchWith(l.attrs, l.fn, l.grid, l.block, l.shared, b.stream, l.args...); err != nil {
			return fmt.Errorf("launching %s %s (grid %v, block %v): %w", c.Variant, l.name, l.grid, l.block, err)
		}
	}
	return nil
}
