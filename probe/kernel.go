package probe

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A kernelPair is one loaded build of a variant: its partial and combine
// entry points, kept loaded for every point that shares the CUBIN. A fused
// build (kernels/ABI.md, "Fused kernels") has no combine: its partial
// writes out.
type kernelPair struct {
	mod              *cuda.Module
	partial, combine *cuda.Function
	fused            bool
	build            *build
	resources        []results.Resource
	// loadsBeforeChain is the SASS count for Resource.LoadsBeforeChain of
	// the partial entry point, -1 when no disassembler was available.
	loadsBeforeChain int
}

// A geometry is how a pair is launched.
type geometry struct {
	grid, block, cgrid, cblock [3]int
	shared                     int
}

// geometryOf returns the launch geometry of a configuration. The plan
// resolves it; a configuration without one (all zero) gets the ABI's
// default, grid (SPLITS, heads, batch) × block 32 and combine (heads,
// batch) × HEAD_DIM.
func geometryOf(c *results.Config, splits int) geometry {
	g := geometry{grid: c.Grid, block: c.Block, cgrid: c.CombineGrid, cblock: c.CombineBlock, shared: c.SharedBytes}
	if g.grid == [3]int{} {
		g.grid = [3]int{splits, c.Shape.Heads, c.Shape.Batch}
	}
	if g.block == [3]int{} {
		g.block = [3]int{32, 1, 1}
	}
	if g.cgrid == [3]int{} {
		g.cgrid = [3]int{c.Shape.Heads, c.Shape.Batch, 1}
	}
	if g.cblock == [3]int{} {
		g.cblock = [3]int{c.Shape.HeadDim, 1, 1}
	}
	return g
}

func threads(b [3]int) int { return b[0] * b[1] * b[2] }

// load compiles (or finds in the caches) and loads the kernels of src
// built with the configuration's defines. A nil pair with a nil error
// means NVRTC rejected the source; the build then carries the log.
func (b *Backend) load(src plan.Source, c *results.Config, flags []string) (*kernelPair, *build, error) {
	opts := compileOptions(b.arch, c.Defines, flags)
	key := cacheKey(src, opts, b.arch, b.nvrtcVersion)
	// The CUBIN does not depend on Fused, but which entry points are looked
	// up and how they are launched does.
	lkey := key
	if src.Fused {
		lkey += " fused"
	}
	if k, ok := b.loaded[lkey]; ok {
		// The record says "cached": this point paid no compile.
		rec := *k.build
		rec.record.Cached, rec.record.Seconds = true, 0
		return k, &rec, nil
	}
	bld, err := b.compile(src, opts)
	if err != nil {
		return nil, nil, err
	}
	if bld.failed {
		return nil, bld, nil
	}
	mod, err := b.ctx.LoadModule(bld.cubin)
	if err != nil {
		return nil, bld, fmt.Errorf("loading the CUBIN of %s: %w", src.Name, err)
	}
	k := &kernelPair{mod: mod, build: bld, fused: src.Fused}
	names := entryPoints(src)
	for i, fn := range []**cuda.Function{&k.partial, &k.combine}[:len(names)] {
		if *fn, err = mod.Function(names[i]); err != nil {
			mod.Unload()
			return nil, bld, fmt.Errorf("finding %s in %s: %w", names[i], src.Name, err)
		}
	}
	b.loaded[lkey] = k
	if b.opts.SASSDir != "" {
		b.keep(c.Variant, key, ".cubin", bld.cubin)
	}
	b.inspect(k, c.Variant, key, names[0])
	return k, bld, nil
}

// entryPoints names the functions to look up in a build of src: partial
// then combine, with the ABI's names where src gives none; the partial
// alone for a fused kernel.
func entryPoints(src plan.Source) []string {
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

// resources reads the compiled footprint of both entry points for the
// launch geometry g. Dynamic shared memory above the default 48 KiB limit
// is opted into here, once per pair, before any launch.
func (b *Backend) resources(k *kernelPair, g geometry) ([]results.Resource, error) {
	type entry struct {
		f            *cuda.Function
		name         string
		threads, dyn int
	}
	var out []results.Resource
	entries := []entry{
		{k.partial, "attn_partial", threads(g.block), g.shared},
		{k.combine, "attn_combine", threads(g.cblock), 0},
	}
	if k.fused {
		entries = entries[:1] // no combine is ever launched
	}
	for i, e := range entries {
		if e.dyn > 48<<10 {
			if err := e.f.SetMaxDynamicShared(e.dyn); err != nil {
				return nil, fmt.Errorf("allowing %d bytes of dynamic shared memory for %s: %w", e.dyn, e.name, err)
			}
		}
		r := results.Resource{Kernel: e.name, DynamicShared: e.dyn, LoadsBeforeChain: -1}
		if i == 0 {
			r.LoadsBeforeChain = k.loadsBeforeChain
		}
		var err error
		if r.Registers, err = e.f.Attr(cuda.FuncNumRegs); err != nil {
			return nil, fmt.Errorf("reading the registers of %s: %w", e.name, err)
		}
		if r.LocalBytes, err = e.f.Attr(cuda.FuncLocalSizeBytes); err != nil {
			return nil, fmt.Errorf("reading the local memory of %s: %w", e.name, err)
		}
		if r.StaticShared, err = e.f.Attr(cuda.FuncSharedSizeBytes); err != nil {
			return nil, fmt.Errorf("reading the shared memory of %s: %w", e.name, err)
		}
		if r.MaxBlocksPerSM, err = e.f.MaxActiveBlocksPerSM(e.threads, e.dyn); err != nil {
			return nil, fmt.Errorf("computing the occupancy of %s: %w", e.name, err)
		}
		r.Occupancy = occupancy(r.MaxBlocksPerSM, e.threads, b.maxThreadsPerSM)
		out = append(out, r)
	}
	return out, nil
}

// occupancy is the theoretical share of an SM's thread slots that resident
// blocks fill.
func occupancy(blocks, threads, maxThreads int) float64 {
	if maxThreads <= 0 {
		return 0
	}
	return math.Min(1, float64(blocks*threads)/float64(maxThreads))
}

// A launch is one kernel launch of a pair, arguments included.
type launch struct {
	fn          *cuda.Function
	name        string // ABI name, for messages
	grid, block [3]int
	shared      int
	args        []any
}

// launches lists the launches of one pair, in stream order: partial then
// combine, or, for a fused kernel, the partial alone with out and the
// scratch counters as its two extra arguments (kernels/ABI.md). Every
// launch path (gates, probes, graph capture, replay) goes through it.
func launches(k *kernelPair, c *results.Config, g geometry, w *workspace) []launch {
	s := c.Shape
	scale := float32(1 / math.Sqrt(float64(s.HeadDim)))
	args := []any{w.q, w.k, w.v, w.positions, w.partial, int32(s.Heads), int32(s.KVHeads), int32(s.Capacity), scale}
	partial := launch{k.partial, "attn_partial", g.grid, g.block, g.shared, args}
	if k.fused {
		partial.args = append(args, w.out, w.scratch)
		return []launch{partial}
	}
	return []launch{partial, {k.combine, "attn_combine", g.cgrid, g.cblock, 0, []any{w.partial, w.out, int32(s.Heads)}}}
}

// launchPair enqueues one pair (launches) on the backend's stream.
func (b *Backend) launchPair(k *kernelPair, c *results.Config, g geometry, w *workspace) error {
	for _, l := range launches(k, c, g, w) {
		if err := b.ctx.Launch(l.fn, l.grid, l.block, l.shared, b.stream, l.args...); err != nil {
			return fmt.Errorf("launching %s %s (grid %v, block %v): %w", c.Variant, l.name, l.grid, l.block, err)
		}
	}
	return nil
}
