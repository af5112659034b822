package spec

import (
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// A struct passed by value may name the engine's C++ type it stands for:
//
//	structs:
//	  params:
//	    type: flashinfer::BatchDecodeParams<half, half, half, int32_t>
//	    fields: [...]
//
// and ktune check then compiles a layout probe beside the kernel, with
// the same compiler, headers and flags, that records sizeof and alignof
// of the type and offsetof and sizeof of every declared field (a field's
// name is the member's), and refuses a declaration that differs, naming
// the field, its declared offset and its real one. A declared layout
// that passes this is the engine's, not a transcription of it.

// A StructType is the C++ type a struct declares.
type StructType struct {
	Type string
	Pos  Pos
}

// cxxType is a C++ type name as the probe writes it in sizeof(...):
// identifiers, ::, template arguments, spaces, digits, commas, * and &.
var cxxType = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:<>, *&()-]*$`)

func (d *decoder) structType(name string, v *yaml.Node, where string, e *engineNodes) {
	t := strings.TrimSpace(d.str(v, where))
	if t == "" || !cxxType.MatchString(t) || strings.Count(t, "<") != strings.Count(t, ">") {
		d.errorf(v, "%s: %q is not a C++ type name (a type, with its template arguments)", where, t)
		return
	}
	if e.structTypes == nil {
		e.structTypes = map[string]StructType{}
	}
	e.structTypes[name] = StructType{Type: t, Pos: pos(v)}
}
