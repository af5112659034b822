package plan

import (
	"bytes"
	"fmt"
	"maps"
	"strings"

	"github.com/ktune/ktune/internal/cubin"
	"github.com/ktune/ktune/internal/spec"
)

// An entry of a prebuilt artifact may be written as its C++ name with
// its template arguments (eng::decode<128, unsigned short, 512>) instead
// of its mangled symbol: the plan demangles the artifact's entries
// (cubin.Resolve), refuses a name that denotes none or several with the
// candidates, and keeps both: the launch's entry stays the C++ name the
// spec wrote (what records and reports show), Source.Symbols maps it to
// the symbol the probe loads and ktune check reads.

// cxxName reports whether an entry is written as C++ rather than as a
// symbol: a qualified name, template arguments or parameter types.
func cxxName(entry string) bool { return strings.ContainsAny(entry, "<>:( ") }

// artifactSymbols lists the entries of a prebuilt image: a CUBIN's (or a
// fatbin's uncompressed CUBIN's) entry functions, a PTX's .entry lines.
func artifactSymbols(kind string, image []byte) ([]string, error) {
	switch kind {
	case spec.ArtifactPTX:
		return cubin.PTXEntries(image), nil
	case spec.ArtifactFatbin:
		at := bytes.Index(image, []byte("\x7fELF"))
		if at < 0 {
			return nil, fmt.Errorf("the fatbin holds no uncompressed CUBIN, whose symbols could be read")
		}
		image = image[at:]
	}
	img, err := cubin.Parse(image)
	if err != nil {
		return nil, err
	}
	return img.Entries(), nil
}

// resolveSymbols maps the C++-named entries of a point's launches from
// the variant's artifact to their symbols. Nothing to do for a source
// NVRTC compiles, an artifact not built yet, or entries all written as
// symbols.
func (b *builder) resolveSymbols(v *spec.Variant, src *Source, launches []Launch) error {
	if src.ArtifactKind == "" || src.Missing != "" || src.BuildFailed {
		return nil
	}
	own := func(i int) bool { return i >= len(v.Launches) || v.Launches[i].Kernel == "" }
	named := false
	for i, l := range launches {
		named = named || own(i) && cxxName(l.Entry)
	}
	if !named {
		return nil
	}
	syms, err := artifactSymbols(src.ArtifactKind, src.Artifact)
	if err != nil {
		return fmt.Errorf("%s:%d:%d: variant %s: reading the symbols of %s: %w", b.s.Path, v.Pos.Line, v.Pos.Col, v.Name, v.Path, err)
	}
	out := map[string]string{}
	for i, l := range launches {
		if !own(i) {
			continue
		}
		sym, err := cubin.Resolve(syms, l.Entry)
		if err != nil {
			pos := v.Pos
			if i < len(v.Launches) {
				pos = v.Launches[i].Pos
			}
			return fmt.Errorf("%s:%d:%d: variant %s, launch %d: %w", b.s.Path, pos.Line, pos.Col, v.Name, i, err)
		}
		out[l.Entry] = sym
	}
	src.Symbols = maps.Clone(out)
	return nil
}
