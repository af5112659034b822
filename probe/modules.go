package probe

import (
	"fmt"
	"maps"
	"path/filepath"
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
		first.symbol[e] = e
		if src.Named {
			first.symbol[e] = bld.lowered[e]
		}
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
