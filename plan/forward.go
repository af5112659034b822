package plan

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/spec"
)

// A sealed kernel (a variant with forward, internal/spec/forward.go) is
// compiled with the defines it forwards and none of ktune's: Source.Sealed
// and Source.Forwarded say so, and Source.CompileDefines is what every
// compile of a point passes (a sweep's, a precompile's, ktune check's).

// CompileDefines returns the defines a point's source is compiled with:
// its own defines, or for a sealed kernel the ones it forwards.
func (s Source) CompileDefines(defines abi.Defines) abi.Defines {
	if s.Sealed {
		return s.Forwarded
	}
	return defines
}

// value evaluates one forwarded value or entry placeholder at a point:
// a define's name gives its value as it is, anything else is an integer
// expression over the geometry symbols and the integer defines.
func value(src string, env expr.Env, defs map[string]string) (string, error) {
	if v, ok := defs[src]; ok {
		return v, nil
	}
	x, err := expr.Parse(src)
	if err != nil {
		return "", err
	}
	n, err := x.Eval(env)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(n, 10), nil
}

// seal gives src the point's forwarded defines and its launches' entries
// with their {EXPR} placeholders evaluated (the launches already carry
// them: geometry); a variant without forward or placeholders keeps src.
func (b *builder) seal(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int, src *Source, launches []Launch) error {
	if v.Forward != nil {
		env, _ := b.evaluator(v, sh, defs, nkv)
		fw := map[string]string{}
		for _, f := range v.Forward {
			val, err := value(f.Value, env, defs)
			if err != nil {
				return b.pointErrorf(v, sh, defs, nkv, "forward.%s %q: %w", f.Name, f.Value, err)
			}
			fw[f.Name] = val
		}
		src.Sealed, src.Forwarded = true, abi.SortDefines(fw)
	}
	if !slices.ContainsFunc(v.Launches, func(l spec.Launch) bool { return len(spec.EntryExprs(l.Entry)) > 0 }) {
		return nil
	}
	src.Entries = nil
	for i, l := range launches {
		if v.Launches[i].Kernel == "" && !slices.Contains(src.Entries, l.Entry) {
			src.Entries = append(src.Entries, l.Entry)
		}
	}
	if src.Named {
		src.NameExprs = src.Entries
		src.Partial, src.Combine = launches[0].Entry, ""
		if len(launches) > 1 {
			src.Combine = launches[1].Entry
		}
	}
	return nil
}

// expandEntry evaluates an entry's {EXPR} placeholders at a point.
func (b *builder) expandEntry(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int, entry string) (string, error) {
	if len(spec.EntryExprs(entry)) == 0 {
		return entry, nil
	}
	env, _ := b.evaluator(v, sh, defs, nkv)
	out, err := spec.ExpandEntry(entry, func(x string) (string, error) { return value(x, env, defs) })
	if err != nil {
		return "", b.pointErrorf(v, sh, defs, nkv, "%w", err)
	}
	return out, nil
}

// declaration matches a C/C++ declaration of an identifier: a type or
// template-parameter keyword (or a type ending in _t) before it.
var declaration = regexp.MustCompile(`\b(?:typename|class|struct|enum|int|bool|unsigned|signed|char|short|long|float|double|auto|size_t|[A-Za-z_][A-Za-z0-9_]*_t)\s*[&*]*\s+([A-Za-z_][A-Za-z0-9_]*)\b`)

// collisions warns about the defines a kernel of an engine's tree is
// compiled with whose names its sources declare as identifiers: -DNAME=…
// rewrites every such declaration (a template parameter int SPLITS
// becomes int 32), which NVRTC reports far from the cause.
func collisions(v *spec.Variant, src Source, defines abi.Defines) []string {
	if v.Builtin != nil || src.Text == "" {
		return nil
	}
	names := map[string]bool{}
	for _, d := range src.CompileDefines(defines) {
		names[d.Name] = true
	}
	files := map[string]string{src.Name: src.Text}
	for n, t := range src.Headers {
		files[n] = t
	}
	var out []string
	for _, f := range sortedKeys(files) {
		for _, m := range declaration.FindAllStringSubmatch(files[f], -1) {
			if name := m[1]; names[name] {
				out = append(out, fmt.Sprintf("variant %s: define %s is also an identifier of the kernel's sources (%s: %q): -D%s rewrites it there; give the kernel only the defines it asks for under names of its own (forward:)",
					v.Name, name, f, strings.TrimSpace(m[0]), name))
				delete(names, name)
			}
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
