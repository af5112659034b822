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
