package cubin

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// C++ names of an image's entries. A C++ kernel's symbol is its Itanium
// ABI mangled name (_ZN3eng6decodeILi128EtLi512EEEvPfPKT0_PKif); an
// engine's spec names it as C++ (eng::decode<128, unsigned short, 512>),
// and Resolve finds the symbol by demangling every entry of the image.
// Demangling is github.com/ianlancetaylor/demangle's: the demangler Go's
// own tools (pprof, the linker's symbol listings) use, kept up with the
// Itanium ABI's templates, enums, lambdas and abi tags; a subset written
// here would have to be kept up with them too.

// CxxName is a symbol's C++ name without its parameters or return type
// (eng::decode<128, unsigned short, 512>), "" when the symbol is not a
// mangled C++ name (an extern "C" kernel).
func CxxName(symbol string) string {
	n, err := demangle.ToString(symbol, demangle.NoParams, demangle.NoEnclosingParams)
	if err != nil {
		return ""
	}
	return n
}

// cxxSignature is a symbol's whole C++ signature without its return type
// (eng::decode<128, unsigned short, 512>(float*, unsigned short const*,
// int const*, float)), "" when it is not a mangled name.
func cxxSignature(symbol string) string {
	n, err := demangle.ToString(symbol, demangle.NoEnclosingParams)
	if err != nil {
		return ""
	}
	// The return type of a template function comes first: "void f<…>(…)".
	if i := strings.Index(n, " "); i >= 0 && !strings.Contains(n[:i], "(") && !strings.Contains(n[:i], "<") {
		n = n[i+1:]
	}
	return n
}

// squeeze drops the spaces of a C++ name, so that "f<unsigned short, 4>"
// and "f<unsigned short,4>" are one name.
func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

// Resolve finds the one symbol of symbols that name denotes: the symbol
// itself, or the symbol whose C++ name (CxxName) or whole signature
// (with its parameter types, to tell overloads apart) is name, spaces
// aside. A name that denotes none or several is an error listing the
// candidates: the symbols whose C++ name has the same unqualified base
// (decode for eng::decode<…>), else every entry.
func Resolve(symbols []string, name string) (string, error) {
	want := squeeze(name)
	var hits []string
	for _, s := range symbols {
		if s == name || squeeze(CxxName(s)) == want || squeeze(cxxSignature(s)) == want {
			hits = append(hits, s)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return "", fmt.Errorf("no entry of the image is named %s; %s", name, candidates(symbols, base(name)))
	}
	var list []string
	for _, h := range hits {
		list = append(list, describe(h))
	}
	sort.Strings(list)
	return "", fmt.Errorf("%s names %d entries of the image (write its parameter types to choose one): %s", name, len(hits), strings.Join(list, "; "))
}

// base is a C++ name's unqualified name without template arguments.
func base(name string) string {
	if i := strings.IndexAny(name, "<("); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, "::"); i >= 0 {
		name = name[i+2:]
	}
	return strings.TrimSpace(name)
}

// candidates lists the entries whose C++ name has base b, else all.
func candidates(symbols []string, b string) string {
	var same, all []string
	for _, s := range symbols {
		all = append(all, describe(s))
		if c := CxxName(s); c != "" && base(c) == b || s == b {
			same = append(same, describe(s))
		}
	}
	sort.Strings(same)
	sort.Strings(all)
	if len(same) > 0 {
		return "entries named " + b + ": " + strings.Join(same, "; ")
	}
	if len(all) == 0 {
		return "the image has no entries"
	}
	return "its entries: " + strings.Join(all, "; ")
}

// describe is a symbol with its C++ name, when it has one.
func describe(s string) string {
	if c := CxxName(s); c != "" {
		return c + " (" + s + ")"
	}
	return s
}

// ParamTypes are the C++ types of a mangled symbol's parameters, as its
// signature prints them (float*, unsigned short const*, int), nil when
// the symbol is not a mangled C++ name: an extern "C" kernel's symbol
// says nothing of its parameters.
func ParamTypes(symbol string) []string {
	sig := cxxSignature(symbol)
	if !strings.HasSuffix(sig, ")") {
		return nil
	}
	// The parameter list is the last top-level parenthesis: a template
	// argument may hold parentheses of its own ((vllm::Fp8KVCacheDataType)0).
	depth, open := 0, -1
	for i := len(sig) - 1; i >= 0; i-- {
		switch sig[i] {
		case ')', '>':
			depth++
		case '(', '<':
			depth--
		}
		if depth == 0 {
			open = i
			break
		}
	}
	if open < 0 {
		return nil
	}
	body := sig[open+1 : len(sig)-1]
	if body == "" {
		return []string{}
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '<', '(', '[':
			depth++
		case '>', ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(body[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(body[start:]))
}

// builtinBytes are the sizes of the element types a kernel's pointer
// parameters read that a C++ signature names by themselves (LP64, as
// nvcc and NVRTC compile for a 64-bit host), CUDA's half and bfloat16
// types and the vector types made of them included. Plain char is not
// among them: a char pointer is a byte address, as void's is (C++ lets
// char alias any object), which a kernel offsets by byte strides and
// casts to the element it reads (llama.cpp's Q, K, V and mask); signed
// and unsigned char (int8_t, uint8_t) are 1-byte elements.
var builtinBytes = map[string]int{
	"bool": 1, "signed char": 1, "unsigned char": 1,
	"short": 2, "unsigned short": 2, "int": 4, "unsigned int": 4,
	"long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8,
	"float": 4, "double": 8,
	"__half": 2, "half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2,
	"__half2": 4, "half2": 4, "__nv_bfloat162": 4,
	"float2": 8, "float4": 16, "int2": 8, "int4": 16, "uint2": 8, "uint4": 16,
}

// floating are the element types that hold one number: a pointer to one
// reads elements of that size, never several packed (as unsigned int or
// half2 may pack two halves).
var floating = map[string]bool{"float": true, "double": true, "__half": true, "half": true, "__nv_bfloat16": true, "nv_bfloat16": true}

// Pointee is the size of what a parameter of C++ type typ points at (0
// when typ is no pointer, points at a pointer, at void or char (bytes of
// any element), or at a type whose size the name alone does not give: a
// class, a template argument left unresolved), and whether it is one floating-point number (float,
// double, half, bfloat16) rather than a container of several elements
// (an integer or a vector type).
func Pointee(typ string) (bytes int, scalarFloat bool) {
	t := strings.TrimSpace(typ)
	for _, q := range []string{"__restrict__", "__restrict", "restrict", "const", "volatile"} {
		t = strings.TrimSpace(strings.TrimSuffix(t, q))
	}
	if !strings.HasSuffix(t, "*") {
		return 0, false
	}
	t = strings.TrimSpace(strings.TrimSuffix(t, "*"))
	if strings.HasSuffix(t, "*") {
		return 0, false
	}
	var words []string
	for _, w := range strings.Fields(t) {
		if w != "const" && w != "volatile" {
			words = append(words, w)
		}
	}
	name := strings.Join(words, " ")
	return builtinBytes[name], floating[name]
}
