package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// TestShapeKeysKVTypes: bf16 and fp8 shapes get keys and labels of their
// own, fp8's with its kv_scale mode; f16's read as before.
func TestShapeKeysKVTypes(t *testing.T) {
	s := results.Shape{Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 4096}
	if got := shapeKey(s); got != "h28-kv4-d128-f16-b1-cap4096" {
		t.Errorf("f16 key %q", got)
	}
	keys := map[string]bool{shapeKey(s): true}
	for _, kv := range [][2]string{{"bf16", ""}, {"fp8e4m3", "tensor"}, {"fp8e4m3", "head"}} {
		s.KVDtype, s.KVScale = abi.Dtype(kv[0]), kv[1]
		k := shapeKey(s)
		if keys[k] || !strings.Contains(k, kv[0]) || !strings.Contains(ShapeDescription(s), kv[0]) {
			t.Errorf("%v: key %q, description %q", kv, k, ShapeDescription(s))
		}
		keys[k] = true
	}
	if got := shapeKey(s); got != "h28-kv4-d128-fp8e4m3/head-b1-cap4096" {
		t.Errorf("fp8 head key %q", got)
	}
}

// TestCSVKVScale: tables.csv says how an fp8 shape's scales were drawn, so
// that a per-head and a per-tensor shape of the same dimensions stay apart
// in a spreadsheet as they do in the report.
func TestCSVKVScale(t *testing.T) {
	recs := loadH200(t, "h200-frontier2.jsonl")
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	col := slices.Index(strings.Split(lines[0], ","), "kv_scale")
	if col < 0 {
		t.Fatalf("no kv_scale column in %q", lines[0])
	}
	seen := map[string]int{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) <= col {
			continue
		}
		seen[f[5]+"/"+f[col]]++ // kv_dtype/kv_scale
	}
	if seen["fp8e4m3/head"] == 0 || seen["f16/"] == 0 || seen["fp8e4m3/"] != 0 {
		t.Errorf("kv_dtype/kv_scale pairs %v: want fp8e4m3 always with its mode, f16 without", seen)
	}
}
