package cubin

import (
	"slices"
	"testing"
)

// TestParamTypes: the parameter types of engines' mangled kernels, template
// parameters resolved (vLLM's T_ is unsigned short), a template argument's
// own parentheses kept inside it, and none for an extern "C" symbol.
func TestParamTypes(t *testing.T) {
	vllm := ParamTypes("_ZN4vllm25paged_attention_v2_kernelIttLi128ELi16ELi128ELNS_18Fp8KVCacheDataTypeE0ELb0ELi512EEEvPfS2_PT_PKS3_PKT0_S9_ifPKiSB_iPKfiiiSD_SD_iiiii")
	want := []string{"float*", "float*", "unsigned short*", "unsigned short const*", "unsigned short const*", "unsigned short const*",
		"int", "float", "int const*", "int const*", "int", "float const*", "int", "int", "int", "float const*", "float const*",
		"int", "int", "int", "int", "int"}
	if !slices.Equal(vllm, want) {
		t.Errorf("vLLM's v2 kernel: %q, want %q", vllm, want)
	}
	merge := ParamTypes("_ZN10flashinfer41PersistentVariableLengthMergeStatesKernelILj8ELj16ELj8ELj4E6__halfS1_iEEvPT3_PfPT5_PT4_S4_jPjj")
	if want := []string{"__half*", "float*", "int*", "__half*", "float*", "unsigned int", "unsigned int*", "unsigned int"}; !slices.Equal(merge, want) {
		t.Errorf("FlashInfer's merge kernel: %q, want %q", merge, want)
	}
	if got := ParamTypes("attn_partial"); got != nil {
		t.Errorf("extern C symbol: %q", got)
	}
	if got := ParamTypes("_Z4stepv"); len(got) != 0 || got == nil {
		t.Errorf("no parameters: %q", got)
	}
}

// TestPointeeBytes: what a parameter points at, by its C++ type; 0 for
// what is no pointer, a pointer to a pointer, void, char (a byte
// address), or a class; signed and unsigned char are 1-byte elements.
func TestPointeeBytes(t *testing.T) {
	for typ, want := range map[string]int{
		"float*": 4, "unsigned short const*": 2, "int const*": 4, "bool const*": 1, "const bool*": 1,
		"__half*": 2, "long long*": 8, "unsigned int*": 4, "uint4 const*": 16, "float* __restrict__": 4,
		"int": 0, "float": 0, "void*": 0, "void const*": 0, "float**": 0, "eng::params<float>": 0,
		"flashinfer::paged_kv_t<__half, int>*": 0, "unsigned short": 0,
		"char const*": 0, "char*": 0, "const char*": 0, "signed char const*": 1, "unsigned char*": 1,
	} {
		if got, _ := Pointee(typ); got != want {
			t.Errorf("Pointee(%q) = %d, want %d", typ, got, want)
		}
	}
}

// TestPointeeScalar: a float or half pointer reads one number an element;
// integer and vector types may pack several.
func TestPointeeScalar(t *testing.T) {
	for typ, want := range map[string]bool{"float*": true, "__half const*": true, "double*": true, "__nv_bfloat16*": true,
		"unsigned int*": false, "half2*": false, "uint4 const*": false, "bool const*": false, "float": false} {
		if _, got := Pointee(typ); got != want {
			t.Errorf("Pointee(%q) scalar %v, want %v", typ, got, want)
		}
	}
}
