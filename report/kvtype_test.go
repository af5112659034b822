package report

import (
	"strings"
	"testing"

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
		s.KVDtype, s.KVScale = kv[0], kv[1]
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
