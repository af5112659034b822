package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// refuseSpec is an engine spec of one launch; its %s are the shape's
// head_dim, the io and the launch's extra arguments.
const refuseSpec = `name: t
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: %d, kv_dtype: f16}
axes:
  nkv: [1, 512]
  SPLITS: [16, 32]
variants:
  - name: e
    kernel: %s
    io: {%s}
    structs:
      p:
        fields:
          - {name: n, arg: heads, count: %d}
    launches:
      - {entry: k, grid: [SPLITS], block: [32], args: [q, out, {struct: p}%s]}
`

// TestPlanRefusesWhatCannotRun: each launch below planned (exit 0) and
// failed on the device after compiling, or passed a wrapped value; the
// plan refuses it at the spec's line and column, exit 2, and the same
// spec without the mistake plans.
func TestPlanRefusesWhatCannotRun(t *testing.T) {
	kernel, err := filepath.Abs("../../internal/spec/testdata/engine/eng.cu")
	if err != nil {
		t.Fatal(err)
	}
	type c struct {
		name    string
		headDim int
		io      string
		count   int
		args    string
		arch    string
		want    string // in the message; "" plans
		at      string
	}
	cases := []c{
		{"intact", 128, "partial: opaque", 4, `, "i32:heads * 2"`, "sm_90", "", ""},
		{"i32 overflow", 128, "partial: opaque", 4, `, "i32:2147483647 * 2"`, "sm_90", "4294967294 does not fit i32", "spec.yaml:16:9:"},
		{"i64 overflow", 128, "partial: opaque", 4, `, "i64:9223372036854775807 * heads"`, "sm_90", "overflows a 64-bit integer", "spec.yaml:16:9:"},
		{"division by zero", 128, "partial: opaque", 4, `, "i64:heads / 0"`, "sm_90", "division by zero", "spec.yaml:16:9:"},
		{"negative unsigned", 128, "partial: opaque", 4, `, "u32:-1"`, "sm_90", "-1 does not fit u32", "spec.yaml:16:9:"},
		{"negative unsigned expression", 128, "partial: opaque", 4, `, "u64:heads - 29"`, "sm_90", "-1 does not fit u64", "spec.yaml:16:9:"},
		{"split_x", 100, "kv_layout: paged, page_size: 16, page_order: split_x, partial: opaque", 4, "", "sm_90", "does not divide head_dim 100", "spec.yaml:8:5:"},
		{"split_x divides", 104, "kv_layout: paged, page_size: 16, page_order: split_x, partial: opaque", 4, "", "sm_90", "", ""},
		{"split_counts zero", 128, `split_counts: "0", partial: opaque`, 4, ", split_counts", "sm_90", `"0" is 0 at nkv 1`, "spec.yaml:8:5:"},
		{"split_counts negative at short nkv", 128, `split_counts: "cdiv(nkv, 256) - 1", partial: opaque`, 4, ", split_counts", "sm_90", "is 0 at nkv 1", "spec.yaml:8:5:"},
		{"split_counts fine", 128, `split_counts: "cdiv(nkv, 256)", partial: opaque`, 4, ", split_counts", "sm_90", "", ""},
		{"params over 4 KiB before Hopper", 128, "partial: opaque", 1100, "", "sm_80", "4416 bytes of parameters, and a launch on sm_80 passes at most 4096", "spec.yaml:16:9:"},
		{"params over 4 KiB on Hopper", 128, "partial: opaque", 1100, "", "sm_90", "", ""},
		{"params over 32 KiB on Hopper", 128, "partial: opaque", 8200, "", "sm_90", "no launch passes more than 32764 bytes of parameters", "spec.yaml:12:7:"},
	}
	for _, tc := range cases {
		path := writeSpec(t, fmt.Sprintf(refuseSpec, tc.headDim, kernel, tc.io, tc.count, tc.args))
		err := run(new(strings.Builder), new(strings.Builder), []string{"plan", "--arch", tc.arch, path})
		code, stderr := exitCode(err), fmt.Sprint(err)
		if err == nil {
			code = exitOK
		}
		if tc.want == "" {
			if code != exitOK {
				t.Errorf("%s: exit %d: %s", tc.name, code, stderr)
			}
			continue
		}
		if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, tc.at) {
			t.Errorf("%s: exit %d, %s; want %d, %q at %s", tc.name, code, stderr, exitUsage, tc.want, tc.at)
		}
	}
}
