package spec

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// strictness catches what a spec would otherwise drop without a word: a
// define axis no variant takes (a misspelt SPILTS sweeps nothing and the
// plan looks right), and a global axis a variant's own values replace
// with values the axis does not hold, or that every variant replaces (a
// user may mean either, so a warning).
func (d *decoder) strictness(s *Spec, w *where) {
	d.axesTaken(s, w)
}

// emptyNames refuses a variant without a name, before anything refers
// to it.
func (d *decoder) emptyNames(s *Spec, w *where) {
	for i := range s.Variants {
		// An empty name names nothing: tables, gates and dispatch tables
		// would show a blank where the variant is.
		if strings.TrimSpace(s.Variants[i].Name) == "" {
			n := w.variants[i].name
			if n == nil {
				n = w.variants[i].node
			}
			d.errorf(n, "variants[%d]: empty name", i)
		}
	}
}

func (d *decoder) axesTaken(s *Spec, w *where) {
	for _, ax := range s.Axes {
		if ax.Name == NKV {
			continue
		}
		var takers, overriders []string
		for i := range s.Variants {
			v := &s.Variants[i]
			if !variantTakes(v, ax.Name) {
				continue
			}
			takers = append(takers, v.Name)
			if local, ok := v.Defines[ax.Name]; ok {
				overriders = append(overriders, v.Name)
				// Pinning a variant to some of the axis's values says
				// what it means; values the axis does not hold replace it.
				if !subset(local, ax.Values) {
					d.warnAt(pos(w.variants[i].defKeys[ax.Name]), "variants[%d] (%s): its own %s %v replaces the axis %s %v",
						i, v.Name, ax.Name, local, ax.Name, ax.Values)
				}
			}
		}
		switch {
		case len(takers) == 0:
			d.errorAt(ax.Pos, "axes.%s: no variant takes %s (%s): a misspelt define?", ax.Name, ax.Name, takesList(s))
		case len(overriders) == len(takers):
			d.warnAt(ax.Pos, "axes.%s: every variant that takes it sets its own values, so the axis sweeps nothing", ax.Name)
		}
	}
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// variantTakes reports whether v (or one of its dispatch arms) receives
// the define name.
func variantTakes(v *Variant, name string) bool {
	if len(v.Dispatch) == 0 {
		return v.takes(name)
	}
	for i := range v.Dispatch {
		a := &v.Dispatch[i]
		if a.Builtin == nil || name == Splits {
			return true
		}
		if _, ok := a.Builtin.Define(name); ok {
			return true
		}
	}
	return false
}

// takesList says what the variants take, for the message of an axis none
// takes.
func takesList(s *Spec) string {
	var parts []string
	for i := range s.Variants {
		v := &s.Variants[i]
		if v.Builtin != nil {
			parts = append(parts, v.Name+" takes "+declared(v.Builtin))
		}
	}
	return strings.Join(parts, "; ")
}

// kernelFileKind returns "" for a kernel path ktune can build or load (CUDA
// source, or a prebuilt PTX, CUBIN or fatbin), else what is wrong with it:
// any other file would be handed to NVRTC as source and fail there, far
// from the line that named it.
func kernelFileKind(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); {
	case ext == ".cu" || ext == ".cuh" || artifactKind(path) != "":
		return ""
	case ext == "":
		return fmt.Sprintf("%s has no extension: a kernel is CUDA source (.cu) or a prebuilt .ptx, .cubin or .fatbin", filepath.Base(path))
	default:
		return fmt.Sprintf("%s is not CUDA source (.cu) nor a prebuilt PTX, CUBIN or fatbin (.ptx, .cubin, .fatbin)", filepath.Base(path))
	}
}

// warnAt records a warning at p: the spec is read, and the plan shows it.
func (d *decoder) warnAt(p Pos, format string, args ...any) {
	d.warns = append(d.warns, &Error{File: d.file, Line: p.Line, Col: p.Col, Msg: "warning: " + fmt.Sprintf(format, args...)})
}
