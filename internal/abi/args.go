package abi

import (
	"fmt"
	"strconv"
	"strings"
)

// An ArgType is the C type a kernel parameter is marshalled as.
type ArgType string

// The parameter types of the signature vocabulary.
const (
	ArgPtr ArgType = "ptr" // a device pointer (8 bytes)
	ArgI32 ArgType = "i32" // int
	ArgU32 ArgType = "u32" // unsigned int
	ArgI64 ArgType = "i64" // long long, int64_t, size_t as a signed count
	ArgU64 ArgType = "u64" // unsigned long long, size_t
	ArgF32 ArgType = "f32" // float
)

// scalarTypes are the types a scalar or a constant may take.
var scalarTypes = []ArgType{ArgI32, ArgU32, ArgI64, ArgU64, ArgF32}

// An Arg is one kernel parameter of a launch: a buffer of the table, a
// scalar of the table or a constant.
type Arg struct {
	Name  string  // a buffer or scalar name; empty for a constant
	Type  ArgType // ArgPtr for a buffer
	Value string  // a constant's literal
}

// String is the argument as written in a spec, canonically: its hash
// text (the plan hashes it).
func (a Arg) String() string {
	switch {
	case a.Name == "":
		return string(a.Type) + ":" + a.Value
	case a.Type == ArgPtr:
		return a.Name
	}
	if s := ScalarNamed(a.Name); s != nil && s.Type == a.Type {
		return a.Name
	}
	return a.Name + ":" + string(a.Type)
}

// IsBuffer reports whether the argument is a device pointer.
func (a Arg) IsBuffer() bool { return a.Type == ArgPtr }

// ParseArg parses one argument of the vocabulary: a buffer (q), a scalar
// (heads, or capacity:i64 with an explicit type) or a constant (i32:4,
// f32:0.5).
func ParseArg(tok string) (Arg, error) {
	tok = strings.TrimSpace(tok)
	name, typ, typed := strings.Cut(tok, ":")
	if typed && isScalarType(ArgType(name)) {
		t, lit := ArgType(name), typ
		if _, err := ParseConst(t, lit); err != nil {
			return Arg{}, fmt.Errorf("constant %q: %q is not a valid %s literal", tok, lit, t)
		}
		return Arg{Type: t, Value: lit}, nil
	}
	if BufferNamed(name) != nil {
		if typed {
			return Arg{}, fmt.Errorf("argument %q: buffer %s is a pointer and takes no type (its dtype is set under io)", tok, name)
		}
		return Arg{Name: name, Type: ArgPtr}, nil
	}
	sc := ScalarNamed(name)
	if sc == nil {
		return Arg{}, fmt.Errorf("argument %q: not in the vocabulary (buffers: %s; scalars: %s; constants: TYPE:VALUE with TYPE one of %s)",
			tok, strings.Join(BufferNames(), ", "), strings.Join(ScalarNames(), ", "), joinTypes(scalarTypes))
	}
	if !typed {
		return Arg{Name: name, Type: sc.Type}, nil
	}
	t := ArgType(typ)
	if !isScalarType(t) {
		return Arg{}, fmt.Errorf("argument %q: unknown type %q (want one of %s)", tok, typ, joinTypes(scalarTypes))
	}
	if (sc.Type == ArgF32) != (t == ArgF32) {
		return Arg{}, fmt.Errorf("argument %q: %s is %s and cannot be passed as %s", tok, name, kindOf(sc.Type), t)
	}
	return Arg{Name: name, Type: t}, nil
}

// ParseConst parses a constant's literal at its type, as the Go value
// that cuda.ArgBytes marshals as that C type.
func ParseConst(t ArgType, lit string) (any, error) {
	switch t {
	case ArgF32:
		f, err := strconv.ParseFloat(lit, 32)
		return float32(f), err
	case ArgI32:
		n, err := strconv.ParseInt(lit, 0, 32)
		return int32(n), err
	case ArgU32:
		n, err := strconv.ParseUint(lit, 0, 32)
		return uint32(n), err
	case ArgI64:
		return strconv.ParseInt(lit, 0, 64)
	case ArgU64:
		return strconv.ParseUint(lit, 0, 64)
	}
	return nil, fmt.Errorf("constant of type %s", t)
}

func kindOf(t ArgType) string {
	if t == ArgF32 {
		return "a float"
	}
	return "an integer"
}

func isScalarType(t ArgType) bool {
	for _, s := range scalarTypes {
		if s == t {
			return true
		}
	}
	return false
}

func joinTypes(ts []ArgType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
