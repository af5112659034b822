package decision

import (
	"testing"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

func TestFastest(t *testing.T) {
	med := []float64{5, 3, 3, 1, 4}
	ok := []bool{true, true, true, false, true}
	got := Fastest(len(med), func(i int) bool { return ok[i] }, func(i int) float64 { return med[i] })
	if got != 1 {
		t.Errorf("Fastest = %d, want 1: the lowest median of those that may take part, the first of equal ones", got)
	}
	if got := Fastest(2, func(int) bool { return false }, func(int) float64 { return 0 }); got != -1 {
		t.Errorf("Fastest of none = %d, want -1", got)
	}
}

// Points keeps the newest record of a point (the first of equal times),
// counts the others as duplicates, and keeps two shapes that differ only
// in an attention option apart, under two labels.
func TestPoints(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 1, 0, 0, s, 0, time.UTC) }
	shape := abi.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: abi.F16, Batch: 1, Capacity: 4096}
	windowed := shape
	windowed.Attention.Window = 1024
	rec := func(hash string, s abi.Shape, t time.Time) results.Record {
		return results.Record{Hash: hash, Time: t, Env: results.Env{Device: "H200"},
			Config: results.Config{Variant: "d2", Splits: 32, Shape: s, NKV: 512}}
	}
	recs := []results.Record{
		rec("a", shape, at(1)), rec("b", shape, at(3)), rec("c", shape, at(3)), rec("d", shape, at(2)),
		rec("w", windowed, at(1)),
	}
	pts, dups := Points(recs)
	if len(pts) != 2 || len(dups) != 3 {
		t.Fatalf("%d points, %d duplicates; want 2 and 3", len(pts), len(dups))
	}
	hashes := map[string]string{}
	for _, p := range pts {
		hashes[p.Label] = p.Rec.Hash
	}
	if hashes["7b"] != "b" || hashes["7b-window1024"] != "w" {
		t.Errorf("points by label: %v; want 7b from the newest record (b, the first of two at the newest time) and 7b-window1024 (w)", hashes)
	}
}
