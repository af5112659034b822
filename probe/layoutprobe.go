package probe

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cubin"
	"github.com/ktune/ktune/plan"
)

// The layout probe: a struct that names its C++ type (plan.LayoutCheck)
// is verified against the engine's own definition by compiling the
// kernel's source once more, with the same headers and options, followed
// by one __device__ array per struct holding sizeof and alignof of the
// type and the offset and size of every declared field. The array's
// initializer is in the CUBIN (cubin.SymbolData); no GPU runs anything.
// A field the type lacks, or a type the source does not define, is a
// compile error, reported with the compiler's log.

// addLayouts records the point's typed structs on the kernel, once each.
func (k *KernelCheck) addLayouts(p *plan.Point) {
	for _, c := range p.Layouts {
		if !slices.ContainsFunc(k.layouts, func(o plan.LayoutCheck) bool { return o.Struct == c.Struct && o.Where == c.Where }) {
			k.layouts = append(k.layouts, c)
		}
	}
}

// checkLayouts compiles the layout probe of a kernel NVRTC built and
// fails the kernel for every declared field whose offset or size is not
// the type's, and for a size or alignment that differs.
func (k *KernelCheck) checkLayouts(env checkEnv) {
	if len(k.layouts) == 0 {
		return
	}
	var image []byte
	switch {
	case k.src.EngineBuild && k.src.LayoutProbe != nil: // built by the variant's own command (plan/build.go)
		image = k.src.LayoutProbe
	case k.src.EngineBuild && k.src.LayoutLog == "":
		k.Notes = append(k.Notes, "struct layouts not checked: the variant's build command compiles no {instantiate}, which the layout probe needs")
		return
	case k.src.EngineBuild:
		k.fail("the struct layout probe, built with the variant's command, failed:\n%s", strings.TrimSpace(k.src.LayoutLog))
		return
	case k.Artifact != "":
		k.Notes = append(k.Notes, "struct layouts not checked: a prebuilt image has no source to probe")
		return
	default:
		src := k.src
		src.Text += plan.LayoutProbe(k.layouts)
		src.NameExprs, src.Named = nil, false
		f, err := env.cache.obtain(context.Background(), cacheKey(src, k.Options, k.Arch, env.version), src, k.Options, env.compile, cacheWait{now: env.now}, env.warn)
		switch {
		case err != nil:
			k.fail("compiling the struct layout probe: %v", err)
			return
		case f.rejected:
			k.fail("the struct layout probe does not compile (a type the source does not define, or a field it lacks):\n%s", strings.TrimSpace(f.log))
			return
		}
		image = f.cubin
	}
	for i, c := range k.layouts {
		data, err := cubin.SymbolData(image, plan.LayoutSymbol(i))
		if err != nil || len(data) != 8*plan.LayoutValues(len(c.Fields)) {
			k.fail("%s: reading the layout probe of struct %s: %v (%d bytes)", c.Where, c.Struct, err, len(data))
			continue
		}
		at := func(j int) int { return int(binary.LittleEndian.Uint64(data[8*j:])) }
		for j, fd := range c.Fields {
			off, size, pointee := at(2+3*j), at(3+3*j), at(4+3*j)
			if off != fd.Offset || size != fd.Size {
				k.fail("%s: struct %s (%s): field %s is declared at offset %d (%d bytes), but the type has it at offset %d (%d bytes)",
					c.Where, c.Struct, c.Type, fd.Path, fd.Offset, fd.Size, off, size)
			}
			// A pointer to elements of another size than what the spec
			// passes reads the array at the wrong stride: a bool* fed an
			// int32 array sees entry k in byte k. void* and members that
			// are no pointer record 0 and are not compared; q and out may
			// be read in vectors of their elements (half2 over f16).
			if !fd.Elem.Holds(pointee, false) {
				hint := ""
				if t := plannedTypeOf(pointee); t != "" && strings.HasPrefix(fd.Arg, "planned:") {
					hint = fmt.Sprintf(" (declare the planned array's entries with type: %s)", t)
				}
				k.fail("%s: struct %s (%s): field %s points to %d-byte elements, but %s passed there holds %d-byte ones%s",
					c.Where, c.Struct, c.Type, fd.Path, pointee, fd.Arg, fd.Elem.Bytes, hint)
			}
		}
		if size, align := at(0), at(1); size != c.Size || align != c.Align {
			k.fail("%s: struct %s (%s): declared sizeof %d, alignof %d; the type's are %d and %d", c.Where, c.Struct, c.Type, c.Size, c.Align, size, align)
		}
	}
}

// plannedTypeOf names the planned entry types of a size, for a hint.
func plannedTypeOf(bytes int) string {
	var names []string
	for _, e := range abi.PlannedElems {
		if e.Bytes() == bytes {
			names = append(names, string(e))
		}
	}
	return strings.Join(names, " or ")
}
