package plan

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// cParams reads the parameter list of an extern "C" __global__ entry
// from a kernel's source and lays it out as the compiler lays out
// parameters: what cuFuncGetParamInfo reports on a GPU, computed on the
// CPU from the text, so that a spec's argument list is checked against
// the kernel it names without a device. A by-value struct's layout comes
// from its declaration in the source (cStruct).
func cParams(src, entry string) ([]abi.ParamSlot, []string, error) {
	src = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`).ReplaceAllString(src, "")
	at := regexp.MustCompile(`\b` + regexp.QuoteMeta(entry) + `\s*\(`).FindStringIndex(src)
	if at == nil {
		return nil, nil, fmt.Errorf("no entry %s in the source", entry)
	}
	depth, end := 1, -1
	for i := at[1]; i < len(src) && end < 0; i++ {
		switch src[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				end = i
			}
		}
	}
	if end < 0 {
		return nil, nil, fmt.Errorf("%s: unbalanced parameter list", entry)
	}
	var slots []abi.ParamSlot
	var decls []string
	off := 0
	for i, p := range strings.Split(src[at[1]:end], ",") {
		p = strings.Join(strings.Fields(p), " ")
		words := strings.Fields(strings.NewReplacer("*", " * ", "const", "", "__restrict__", "", "__grid_constant__", "").Replace(p))
		typ := strings.Join(words[:max(0, len(words)-1)], " ")
		if strings.Contains(p, "*") {
			typ = "*"
		}
		size, align, err := cType(src, typ)
		if err != nil {
			return nil, nil, fmt.Errorf("%s parameter %d (%s): %w", entry, i, p, err)
		}
		off = abi.ParamOffset(off, align)
		slots = append(slots, abi.ParamSlot{Offset: off, Size: size})
		decls = append(decls, p)
		off += size
	}
	return slots, decls, nil
}

// cType is the size and alignment of a C type of the kernels' sources: a
// pointer ("*"), the scalar and vector types they use, CUtensorMap, or a
// struct declared in src, laid out field by field.
func cType(src, typ string) (size, align int, err error) {
	switch typ {
	case "*", "long long", "unsigned long long", "int64_t", "uint64_t", "size_t":
		return 8, 8, nil
	case "int", "unsigned", "unsigned int", "float", "uint32_t", "int32_t":
		return 4, 4, nil
	case "short", "unsigned short":
		return 2, 2, nil
	case "bool", "char", "unsigned char":
		return 1, 1, nil
	case "uint3", "int3", "float3":
		return 12, 4, nil
	case "uint2", "int2", "float2":
		return 8, 8, nil
	case "uint4", "int4", "float4":
		return 16, 16, nil
	case "CUtensorMap":
		return 128, 64, nil
	}
	name := strings.TrimPrefix(typ, "struct ")
	m := regexp.MustCompile(`struct\s+(?:alignas\(\d+\)\s+)?` + regexp.QuoteMeta(name) + `\s*\{([^}]*)\}`).FindStringSubmatch(src)
	if m == nil {
		return 0, 0, fmt.Errorf("type %q is neither a C type the test knows nor a struct of the source", typ)
	}
	off, align := 0, 1
	for _, decl := range strings.Split(m[1], ";") {
		decl = strings.TrimSpace(decl)
		if decl == "" {
			continue
		}
		// "const unsigned short *k, *v" declares two pointers; "int a, b" two ints.
		parts := strings.Split(decl, ",")
		first := strings.Fields(strings.NewReplacer("*", " * ", "const", "").Replace(parts[0]))
		base := strings.Join(first[:len(first)-1], " ")
		for _, d := range parts {
			ptr := strings.Contains(d, "*")
			n := 1
			if a := regexp.MustCompile(`\[(\d+)\]`).FindStringSubmatch(d); a != nil {
				fmt.Sscan(a[1], &n)
			}
			t := strings.TrimSpace(strings.TrimSuffix(base, "*"))
			if ptr {
				t = "*"
			}
			fs, fa, err := cType(src, t)
			if err != nil {
				return 0, 0, fmt.Errorf("struct %s: %w", name, err)
			}
			off = (off + fa - 1) / fa * fa
			off += n * fs
			align = max(align, fa)
		}
	}
	return (off + align - 1) / align * align, align, nil
}

// TestCParams lays out two engine-style kernels' parameters from their
// sources by the C rules, with offsets derived by hand: FlashInfer's
// params struct (a nested struct of seven u32 and six pointers, 80 bytes;
// the whole 208, the bool at 200 rounding it to 8) and XQA's list with a
// 32-byte struct and a CUtensorMap 64-aligned (in the constant bank,
// abi.ParamBase) after a pointer at 72.
func TestCParams(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../kernels/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct {
		file, entry string
		want        []abi.ParamSlot
	}{
		{"paged_flashinfer.cu", "batch_decode_paged", []abi.ParamSlot{ps(0, 208)}},
		// As the H200's CUBIN says (KPARAM_INFO): the map's address,
		// 0x210 + 112, is 64-aligned.
		{"xqa_tma.cu", "kernel_mha", []abi.ParamSlot{ps(0, 4), ps(4, 4), ps(8, 8), ps(16, 8), ps(24, 8), ps(32, 32), ps(64, 4), ps(72, 8),
			ps(112, 128), ps(240, 4), ps(248, 8), ps(256, 8)}},
		{"sglang_stage2.cu", "_fwd_kernel_stage2", []abi.ParamSlot{ps(0, 8), ps(8, 8), ps(16, 8), ps(24, 8), ps(32, 8), ps(40, 8),
			ps(48, 4), ps(52, 4), ps(56, 4), ps(60, 4), ps(64, 4), ps(68, 4)}},
	} {
		got, _, err := cParams(read(c.file), c.entry)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v (%v), want %v", c.entry, got, err, c.want)
		}
	}
	if _, _, err := cType("struct s { widget w; };", "s"); err == nil {
		t.Error("a struct of an unknown type laid out")
	}
}

func ps(offset, size int) abi.ParamSlot { return abi.ParamSlot{Offset: offset, Size: size} }
