package plan

import "testing"

func TestGeometryAt(t *testing.T) {
	g := &Geometry{Grid: [3]string{"cdiv(nkv, 256)", "heads", "batch"}, Symbols: map[string]int64{"heads": 28, "batch": 2}}
	for _, c := range []struct {
		nkv  int
		want [3]int
	}{{1, [3]int{1, 28, 2}}, {256, [3]int{1, 28, 2}}, {257, [3]int{2, 28, 2}}, {4096, [3]int{16, 28, 2}}} {
		got, err := g.At(c.nkv)
		if err != nil || got != c.want {
			t.Errorf("At(%d) = %v, %v; want %v", c.nkv, got, err, c.want)
		}
	}
	if _, err := (&Geometry{Grid: [3]string{"nkv - 10"}}).At(5); err == nil {
		t.Error("a grid below 1 was accepted")
	}
	if _, err := (&Geometry{Grid: [3]string{"splits"}}).At(5); err == nil {
		t.Error("an unknown symbol was accepted")
	}
}
