package plan

import (
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// TestPagedPoints: a built-in built with PAGE_SIZE runs paged, its
// attn_partial taking block_table and max_pages after kv_scale and before
// the options' arguments, the page size hashed; without PAGE_SIZE it
// keeps the ABI's io. A user kernel's page_size may name a define.
func TestPagedPoints(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: paged
shapes:
  - {name: f16, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: f16}
  - {name: fp8, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: fp8e4m3, softcap: 30}
axes: {nkv: [512], SPLITS: [16]}
variants:
  - {name: m, kernel: mma, defines: {PAGE_SIZE: [0, 16, 64]}}
  - name: u
    kernel: ../../kernels/testdata/oob.cu
    defines: {PAGE_SIZE: [16]}
    io: {kv_layout: paged, page_size: PAGE_SIZE, page_order: hnd}
    launches:
      - {entry: k, grid: [heads, batch], block: [32], args: [q, k, v, out, block_table, page_indptr, last_page_len, max_pages, kv_page_stride]}
gates: {max_abs: 5e-3, fp8e4m3: {max_abs: 5e-2, max_rel: 0.2}}
`), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]bool{}
	n := 0
	for _, pt := range p.Points {
		c := pt.Config
		ps, _ := c.Define("PAGE_SIZE")
		var args []string
		for _, a := range pt.Launches[0].Args {
			args = append(args, a.String())
		}
		got := strings.Join(args, ",")
		hashes[pt.Hash] = true
		n++
		switch {
		case c.Variant == "u":
			if pt.IO.KVLayout != abi.Paged || pt.IO.Paging.Order != abi.PageHND || pt.PageSize != 16 {
				t.Errorf("u: io %+v, page size %d", pt.IO, pt.PageSize)
			}
		case ps == "0":
			if pt.IO != abi.ABIIO || pt.PageSize != 0 || strings.Contains(got, "block_table") {
				t.Errorf("%s PAGE_SIZE 0: io %+v, page size %d, args %s", c.Shape.Name, pt.IO, pt.PageSize, got)
			}
		default:
			want := ",scale,block_table,max_pages"
			if c.Shape.Name == "fp8" {
				want = ",scale,kv_scale,block_table,max_pages,softcap"
			}
			if pt.IO.KVLayout != abi.Paged || pt.IO.Paging.PageSize != "PAGE_SIZE" || pt.PageSize != atoi(t, ps) || !strings.HasSuffix(got, want) {
				t.Errorf("%s PAGE_SIZE %s: io %+v, page size %d, args %s (want suffix %s)", c.Shape.Name, ps, pt.IO, pt.PageSize, got, want)
			}
		}
	}
	if n != 8 || len(hashes) != n {
		t.Errorf("%d points, %d hashes: want 8 distinct", n, len(hashes))
	}
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("%q is not a number", s)
		}
		n = 10*n + int(c-'0')
	}
	return n
}
