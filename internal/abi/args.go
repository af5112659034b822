package abi

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/expr"
)

// An ArgType is the C type a kernel parameter is marshalled as.
type ArgType string

// The parameter types of the signature vocabulary.
const (
	ArgPtr ArgType = "ptr" // a device pointer (8 bytes)
	ArgI32 ArgType = "i32" // int
	ArgU32 ArgType = "u32" // unsigned int
	ArgU8  ArgType = "u8"  // unsigned char, or a bool (0 or 1) as C++ lays one out
	ArgI64 ArgType = "i64" // long long, int64_t, size_t as a signed count
	ArgU64 ArgType = "u64" // unsigned long long, size_t
	ArgF32 ArgType = "f32" // float
)

// scalarTypes are the types a scalar or a constant may take.
var scalarTypes = []ArgType{ArgI32, ArgU32, ArgI64, ArgU64, ArgF32, ArgU8}

// An Arg is one kernel parameter of a launch, or one field of a by-value
// struct: a buffer of the table, a scalar of the table, a constant or an
// integer expression, a null pointer, a small vector or a struct.
type Arg struct {
	Name  string  // a buffer or scalar name; empty otherwise
	Type  ArgType // ArgPtr for a buffer or null; a vector type; ArgStruct
	Value string  // a constant's literal or an integer expression; "null" for a null pointer
	// Elems are a vector's components, each a scalar, a constant or an
	// expression of the vector's element type.
	Elems []Arg
	// Struct is a by-value struct's declaration.
	Struct *Struct
	// TensorMap is a CUtensorMap's declaration (Type ArgTensorMap).
	TensorMap *TensorMap
}

// NullArg is the null pointer argument.
var NullArg = Arg{Type: ArgPtr, Value: "null"}

// String is the argument as written in a spec, canonically: its hash
// text (the plan hashes it). A struct's text is its whole layout, so that
// changing a field or an offset changes the hash.
func (a Arg) String() string {
	switch {
	case a.Struct != nil:
		return a.Struct.String()
	case a.TensorMap != nil:
		return a.TensorMap.String()
	case a.Elems != nil:
		parts := make([]string, len(a.Elems))
		for i, e := range a.Elems {
			parts[i] = e.String()
		}
		return string(a.Type) + "(" + strings.Join(parts, ", ") + ")"
	case a.Type == ArgPtr && a.Name == "":
		return "null"
	case a.IsScratch():
		return "scratch:" + a.Name
	case a.IsPlanned():
		return "planned:" + a.Name
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
//
// An integer type may also take an expression over the geometry symbols,
// the defines and the integer scalars (i64:heads * head_dim); the plan
// evaluates it at each point (Resolve). null is a null pointer.
func ParseArg(tok string) (Arg, error) {
	tok = strings.TrimSpace(tok)
	if tok == "null" {
		return NullArg, nil
	}
	name, typ, typed := strings.Cut(tok, ":")
	if typed && name == "scratch" {
		if typ = strings.TrimSpace(typ); typ == "" {
			return Arg{}, fmt.Errorf("argument %q: scratch:NAME names a buffer declared under scratch", tok)
		}
		return ScratchArg(typ), nil
	}
	if typed && name == "planned" {
		if typ = strings.TrimSpace(typ); typ == "" {
			return Arg{}, fmt.Errorf("argument %q: planned:NAME names an array declared under planned", tok)
		}
		return PlannedArg(typ), nil
	}
	if typed && isScalarType(ArgType(name)) {
		t, lit := ArgType(name), strings.TrimSpace(typ)
		if _, err := ParseConst(t, lit); err != nil {
			if t == ArgF32 || !isExpr(lit) {
				return Arg{}, fmt.Errorf("constant %q: %q is not a valid %s literal%s", tok, lit, t, why(err))
			}
			if _, err := expr.Parse(lit); err != nil {
				return Arg{}, fmt.Errorf("argument %q: %q is neither a %s literal nor an expression: %w", tok, lit, t, err)
			}
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
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			// A kernel's float argument is a scale or a cap: NaN or Inf
			// there makes every output NaN, whatever the kernel does.
			err = errors.New("it is not finite")
		}
		return float32(f), err
	case ArgI32:
		n, err := strconv.ParseInt(lit, 0, 32)
		return int32(n), err
	case ArgU32:
		n, err := strconv.ParseUint(lit, 0, 32)
		return uint32(n), err
	case ArgU8:
		n, err := strconv.ParseUint(lit, 0, 8)
		return uint8(n), err
	case ArgI64:
		return strconv.ParseInt(lit, 0, 64)
	case ArgU64:
		return strconv.ParseUint(lit, 0, 64)
	}
	return nil, fmt.Errorf("constant of type %s", t)
}

// why is what ParseConst adds to strconv's refusals (": it is not
// finite"), "" for those.
func why(err error) string {
	if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
		return ""
	}
	return ": " + err.Error()
}

// isExpr reports whether a literal that does not parse as a number reads
// as an expression: it names a symbol or uses an operator. "1.5" for an
// integer does not: a mistyped number stays a literal's error.
func isExpr(lit string) bool {
	return strings.ContainsAny(lit, "+-*/%() ") || (lit != "" && (lit[0] == '_' || lit[0] >= 'a' && lit[0] <= 'z' || lit[0] >= 'A' && lit[0] <= 'Z'))
}

// IsExpr reports whether a constant argument holds an integer expression
// rather than a literal.
func (a Arg) IsExpr() bool {
	if a.Name != "" || a.Value == "" || a.Type == ArgPtr || a.Elems != nil || a.Struct != nil || a.TensorMap != nil {
		return false
	}
	_, err := ParseConst(a.Type, a.Value)
	return err != nil
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
