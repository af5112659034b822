package probe

import (
	"encoding/binary"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A step whose launches come from several prebuilt files (plan.Module:
// an engine's partial and combine built apart) loads each file as a
// module of its own. The variant's kernel is loaded as before; each
// other file goes through the same load as a prebuilt artifact of its
// own (moduleSource), and the pair holds every module, so that unload
// and the fresh-module gate's reload cover all of them.

// moduleSource is one of a step's other files as the Source of a
// prebuilt artifact that names only the entries taken from it.
func moduleSource(m plan.Module) plan.Source {
	s := plan.Source{Name: filepath.Base(m.Path), Entries: m.Entries, Artifact: m.Image, ArtifactKind: m.Kind, ArtifactSHA256: m.SHA256}
	if m.Missing {
		s.Missing = m.Path
	}
	return s
}

// A fileImage is one module of a step to load: its image and the
// entries to look up in it, each by the symbol it has there.
type fileImage struct {
	name    string
	image   []byte
	entries []string
	symbol  map[string]string // entry → symbol (a name expression's lowered one)
}

// fileImages lists the modules of a loaded build of src, the variant's
// kernel first: what a fresh load (reload) loads again.
func fileImages(src plan.Source, bld *build) []fileImage {
	first := fileImage{name: src.Name, image: bld.cubin, entries: entryPoints(src), symbol: map[string]string{}}
	for _, e := range first.entries {
		first.symbol[e] = symbolOf(src, bld.lowered, e)
	}
	out := []fileImage{first}
	for _, m := range src.Modules {
		f := fileImage{name: filepath.Base(m.Path), image: m.Image, entries: m.Entries, symbol: map[string]string{}}
		for _, e := range m.Entries {
			f.symbol[e] = e
		}
		out = append(out, f)
	}
	return out
}

// loadModules loads src's other files into k after its variant's kernel
// was loaded: one module per file, each of its entries found in it.
func (b *Backend) loadModules(src plan.Source, c *results.Config, k *kernelPair) (*kernelPair, error) {
	if len(src.Modules) == 0 {
		return k, nil
	}
	out := &kernelPair{mod: k.mod, build: k.build, fns: maps.Clone(k.fns), params: maps.Clone(k.params), resources: k.resources, loadsBeforeChain: k.loadsBeforeChain}
	for _, m := range src.Modules {
		mk, _, err := b.load(moduleSource(m), c, nil)
		if err != nil {
			return nil, fmt.Errorf("loading %s, the file of %s: %w", m.Path, strings.Join(m.Entries, ", "), err)
		}
		out.others = append(out.others, mk.mod)
		maps.Copy(out.fns, mk.fns)
		maps.Copy(out.params, mk.params) // each entry checked against its own file's parameters
	}
	return out, nil
}

// loadFresh loads every module of a build again, as modules of their
// own whose __device__ variables start from their initial values.
func loadFresh(ctx *cuda.Context, src plan.Source, k *kernelPair) (*kernelPair, error) {
	f := &kernelPair{build: k.build, fns: map[string]*cuda.Function{}, loadsBeforeChain: k.loadsBeforeChain}
	for i, img := range fileImages(src, k.build) {
		mod, err := ctx.LoadImage(img.image)
		if err != nil {
			unloadPair(f)
			return nil, fmt.Errorf("loading a fresh module of %s: %w", img.name, err)
		}
		if i == 0 {
			f.mod = mod
		} else {
			f.others = append(f.others, mod)
		}
		for _, e := range img.entries {
			if f.fns[e], err = mod.Function(img.symbol[e]); err != nil {
				unloadPair(f)
				return nil, fmt.Errorf("finding %s in a fresh module of %s: %w", e, img.name, err)
			}
		}
	}
	return f, nil
}

// unloadPair unloads every module of k.
func unloadPair(k *kernelPair) {
	if k.mod != nil {
		k.mod.Unload()
	}
	for _, m := range k.others {
		m.Unload()
	}
}

// sharedFromSymbols sets the dynamic shared memory of each launch of g
// that names a shared symbol (plan.Launch.SharedSymbol) to the value of
// that module variable, read once the modules are loaded and before any
// launch. g's steps are copied: the plan's launches stay as planned.
func sharedFromSymbols(d device, k *kernelPair, g *geometry) error {
	if !slices.ContainsFunc(g.steps, func(l plan.Launch) bool { return l.SharedSymbol != "" }) {
		return nil
	}
	g.steps = slices.Clone(g.steps)
	for i := range g.steps {
		l := &g.steps[i]
		if l.SharedSymbol == "" {
			continue
		}
		b, err := d.symbol(k, l.SharedSymbol)
		if err != nil {
			return fmt.Errorf("%s: reading its shared memory size: %w", l.Entry, err)
		}
		if l.Shared, err = symbolBytes(b); err != nil {
			return fmt.Errorf("%s: shared_symbol %s: %w", l.Entry, l.SharedSymbol, err)
		}
	}
	g.shared = g.steps[0].Shared
	return nil
}

// symbolBytes is a shared memory size held in a module variable: a 4- or
// 8-byte little-endian integer (int, unsigned, size_t) from 0 to 2^31-1.
func symbolBytes(b []byte) (int, error) {
	var v int64
	switch len(b) {
	case 4:
		v = int64(int32(binary.LittleEndian.Uint32(b)))
	case 8:
		v = int64(binary.LittleEndian.Uint64(b))
	default:
		return 0, fmt.Errorf("the variable is %d bytes: want a 4- or 8-byte integer", len(b))
	}
	if v < 0 || v > 1<<31-1 {
		return 0, fmt.Errorf("%d bytes of shared memory is outside 0..2^31-1", v)
	}
	return int(v), nil
}
