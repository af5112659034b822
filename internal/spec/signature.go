// A variant's declared signature: which buffers its kernels read and
// write, in which dtype and layout, and the launches of one decode step
// with their entry points and argument lists. The format is specified in
// doc.go ("Bring your own kernel"); this file holds the vocabulary.

package spec

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

// Buffers are the device buffers an argument may name. Each is described
// in doc.go; the sizes and layouts are probe's (probe/buffers.go).
var Buffers = []string{"q", "k", "v", "out", "partial", "workspace", "positions", "seqlens", "lse", "counters", "kv_scale", "k_scale", "v_scale"}

// ScaleBuffers are the buffers of a scaled KV type's scales (kvtype): the
// whole f32 [2][kv_heads] array (kv_scale) or its K and V halves, as an
// engine kernel that takes vLLM's k_scale and v_scale pointers declares
// them. Only a shape of a scaled type has them.
var ScaleBuffers = []string{"kv_scale", "k_scale", "v_scale"}

// Scalars are the shape-derived values an argument may name, with the type
// each is passed as unless the argument says otherwise (name:i64).
var Scalars = map[string]ArgType{
	"heads": ArgI32, "kv_heads": ArgI32, "head_dim": ArgI32, "capacity": ArgI32, "batch": ArgI32,
	"group": ArgI32, "splits": ArgI32,
	"kv_row_stride": ArgI32, "kv_head_stride": ArgI32, "kv_batch_stride": ArgI32,
	"pstr": ArgI32, "scale": ArgF32,
}

// An Arg is one kernel parameter of a launch: a buffer, a scalar of the
// shape or a constant.
type Arg struct {
	Name  string  // a buffer or scalar name; empty for a constant
	Type  ArgType // ArgPtr for a buffer
	Value string  // a constant's literal
}

// String is the argument as written in a spec, canonically: the plan
// hashes it.
func (a Arg) String() string {
	switch {
	case a.Name == "":
		return string(a.Type) + ":" + a.Value
	case a.Type == ArgPtr || Scalars[a.Name] == a.Type:
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
		var err error
		if t == ArgF32 {
			_, err = strconv.ParseFloat(lit, 32)
		} else if t == ArgU32 || t == ArgU64 {
			_, err = strconv.ParseUint(lit, 0, bitsOf(t))
		} else {
			_, err = strconv.ParseInt(lit, 0, bitsOf(t))
		}
		if err != nil {
			return Arg{}, fmt.Errorf("constant %q: %q is not a valid %s literal", tok, lit, t)
		}
		return Arg{Type: t, Value: lit}, nil
	}
	if contains(Buffers, name) {
		if typed {
			return Arg{}, fmt.Errorf("argument %q: buffer %s is a pointer and takes no type (its dtype is set under io)", tok, name)
		}
		return Arg{Name: name, Type: ArgPtr}, nil
	}
	def, ok := Scalars[name]
	if !ok {
		return Arg{}, fmt.Errorf("argument %q: not in the vocabulary (buffers: %s; scalars: %s; constants: TYPE:VALUE with TYPE one of %s)",
			tok, strings.Join(Buffers, ", "), strings.Join(scalarNames(), ", "), joinTypes(scalarTypes))
	}
	if !typed {
		return Arg{Name: name, Type: def}, nil
	}
	t := ArgType(typ)
	if !isScalarType(t) {
		return Arg{}, fmt.Errorf("argument %q: unknown type %q (want one of %s)", tok, typ, joinTypes(scalarTypes))
	}
	if (def == ArgF32) != (t == ArgF32) {
		return Arg{}, fmt.Errorf("argument %q: %s is %s and cannot be passed as %s", tok, name, kindOf(def), t)
	}
	return Arg{Name: name, Type: t}, nil
}

func kindOf(t ArgType) string {
	if t == ArgF32 {
		return "a float"
	}
	return "an integer"
}

func bitsOf(t ArgType) int {
	if t == ArgI64 || t == ArgU64 {
		return 64
	}
	return 32
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

func scalarNames() []string {
	// A fixed order, so that error messages (and their golden files) are
	// stable.
	return []string{"heads", "kv_heads", "head_dim", "capacity", "batch", "group", "splits",
		"kv_row_stride", "kv_head_stride", "kv_batch_stride", "pstr", "scale"}
}

// A Launch is one kernel launch of a decode step, in stream order.
type Launch struct {
	// Entry names the __global__ function: an extern "C" name, or for a
	// .cu source any C++ name expression NVRTC can resolve (a template
	// instantiation such as partial<__half, 4>); for a prebuilt PTX, CUBIN
	// or fatbin the symbol as it is in the file (the mangled name).
	Entry  string
	Grid   []string // 1 to 3 expressions
	Block  []string // 1 to 3 expressions
	Shared string   // bytes of dynamic shared memory; empty: 0
	Args   []Arg    // the parameters, in order
	// Cluster is the launch's thread-block cluster, 1 to 3 expressions;
	// empty: none (Variant.Cluster).
	Cluster []string
	Pos     Pos
}

// Dtypes the io section accepts for q and out.
var Dtypes = []string{"f32", "f16", "bf16"}

// KV layouts: [batch][capacity][kv_heads][head_dim] (the ABI's) and
// [batch][kv_heads][capacity][head_dim].
const (
	KVBSHD = "bshd"
	KVBHSD = "bhsd"
)

// Partial layouts: the ABI's slots, which the gates inspect, or opaque
// scratch of the same size that they do not.
const (
	PartialABI    = "abi"
	PartialOpaque = "opaque"
)

// IO declares the dtypes and layouts of a variant's buffers.
type IO struct {
	Q        string // dtype of q: f32 (default), f16, bf16
	Out      string // dtype of out: f32 (default), f16, bf16
	KVLayout string // KVBSHD (default) or KVBHSD
	Partial  string // PartialABI (default) or PartialOpaque
	// Workspace is the size in bytes of the workspace buffer, an
	// expression over the geometry symbols; empty: no workspace.
	Workspace string
}

// ABIIO is the io of the ABI (kernels/ABI.md): f32 q and out, K/V as
// [batch][capacity][kv_heads][head_dim], the gates reading the partial
// slots.
var ABIIO = IO{Q: "f32", Out: "f32", KVLayout: KVBSHD, Partial: PartialABI}

// Artifact kinds: a variant whose kernel is a prebuilt file is loaded
// as it is, without NVRTC.
const (
	ArtifactPTX    = "ptx"
	ArtifactCUBIN  = "cubin"
	ArtifactFatbin = "fatbin"
)

// artifactKind returns the artifact kind of a kernel path by its
// extension, "" for a source.
func artifactKind(path string) string {
	for _, k := range []string{ArtifactPTX, ArtifactCUBIN, ArtifactFatbin} {
		if strings.HasSuffix(path, "."+k) {
			return k
		}
	}
	return ""
}
