package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// plan reads a prebuilt CUBIN's parameter records and refuses, at the
// launch's line and with exit 3, a launch whose arguments are not the
// kernel's parameters or whose entry the CUBIN lacks; a matching launch
// plans. No compiler and no GPU are involved.
func TestPlanPrebuiltParams(t *testing.T) {
	cubin, err := filepath.Abs("../../internal/cubin/testdata/params.cubin")
	if err != nil {
		t.Fatal(err)
	}
	const body = `name: t
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
axes:
  nkv: [512]
  SPLITS: [1]
variants:
  - name: pre
    kernel: %s
    launches:
      - {entry: none, grid: [1], block: [32], args: []}
      - {entry: %s, grid: [1], block: [32], args: [%s]}
`
	for _, tc := range []struct {
		name, entry, args string
		code              int
		want              string
	}{
		{"matching", "_Z5tiledIfLi4ELb1EEvPT_i", "out, heads", exitOK, ""},
		{"one argument short", "_Z5tiledIfLi4ELb1EEvPT_i", "out", exitBuild,
			"spec.yaml:12:9: variant pre, launch 1: _Z5tiledIfLi4ELb1EEvPT_i: the kernel takes 2 parameters, the launch declares 1"},
		{"another size", "_Z5tiledIfLi4ELb1EEvPT_i", `out, "heads:u64"`, exitBuild,
			"parameter 1 is 4 bytes at offset 8 in the kernel, but the launch declares heads:u64, 8 bytes at offset 8"},
		{"an entry not in the artifact", "tiled", "out, heads", exitBuild,
			"params.cubin: the image has no entry tiled (it has"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSpec(t, fmt.Sprintf(body, cubin, tc.entry, tc.args))
			err := run(new(strings.Builder), new(strings.Builder), []string{"plan", path})
			if code := exitCode(err); err != nil && code != tc.code || err == nil && tc.code != exitOK || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("err %v (exit %d); want exit %d and %q", err, code, tc.code, tc.want)
			}
		})
	}
}

// An entry of a prebuilt CUBIN written as its C++ name is found by
// demangling the CUBIN's symbols; a missing or ambiguous one is refused
// at the launch's line with the candidates (exit 2, a spec mistake); a
// resolved one's parameters are checked as a symbol's are.
func TestPlanCxxEntries(t *testing.T) {
	cubin, err := filepath.Abs("../../internal/cubin/testdata/params.cubin")
	if err != nil {
		t.Fatal(err)
	}
	const body = `name: t
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
axes:
  nkv: [512]
  SPLITS: [1]
  PART: [256, 512]
variants:
  - name: pre
    kernel: %s
    launches:
      - {entry: "%s", grid: [1], block: [32], args: [%s]}
`
	for _, tc := range []struct {
		name, entry, args string
		code              int
		want              string
	}{
		{"an axis as a template argument", "eng::decode<{head_dim}, unsigned short, {PART}>", "out, k, seqlens, scale", exitUsage,
			"spec.yaml:12:9: variant pre, launch 0: no entry of the image is named eng::decode<128, unsigned short, 256>; entries named decode: eng::decode<128, unsigned short, 512> (_ZN3eng6decodeILi128EtLi512EEEvPfPKT0_PKif); eng::decode<64, __half, 256>"},
		{"one instantiation", "eng::decode<128, unsigned short, 512>", "out, k, seqlens, scale", exitOK, ""},
		{"its parameters checked", "eng::decode<128, unsigned short, 512>", "out, k, seqlens", exitBuild,
			"spec.yaml:12:9: variant pre, launch 0: eng::decode<128, unsigned short, 512>: the kernel takes 4 parameters, the launch declares 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSpec(t, fmt.Sprintf(body, cubin, tc.entry, tc.args))
			var stdout strings.Builder
			err := run(&stdout, new(strings.Builder), []string{"plan", path})
			if code := exitCode(err); err != nil && code != tc.code || err == nil && tc.code != exitOK || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("err %v (exit %d); want exit %d and %q", err, code, tc.code, tc.want)
			}
		})
	}
}
