package probe

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// plannedLength is entry b of a host-planned array as the device holds
// it, read as sequence b's length by a fake kernel (nkvFromPlanned).
func (f *fakeDevice) plannedLength(w *workspace, name string, b int) int {
	for _, sp := range w.l.dims(abi.Shape{}).PlannedSpans() {
		if sp.Name == name {
			return int(int32(binary.LittleEndian.Uint32(f.at(w.planned)[sp.Offset+4*int64(b):])))
		}
	}
	panic("fake: no planned array " + name)
}

// plannedPoint is fakePoint with host-planned arrays: the lengths
// (per_seq), their prefix sums and a tile list of 16-row chunks.
func plannedPoint(lens string) *plan.Point {
	p := fakePoint("k", 100)
	p.Planned = []abi.Planned{
		{Name: "lens", Kind: abi.PlanPerSeq, Count: lens},
		{Name: "indptr", Kind: abi.PlanPrefix, Count: "cdiv(nkv, 16)"},
		{Name: "tiles", Kind: abi.PlanExpand, Count: "cdiv(nkv, 16)", Value: "j", Length: "batch * cdiv(capacity, 16)", Pad: -1},
	}
	p.PlannedBufs = []abi.PlannedBuf{{Name: "lens", Entries: 2}, {Name: "indptr", Entries: 3}, {Name: "tiles", Entries: 32}}
	return p
}

// TestPlannedArrays: a kernel that takes its lengths from a host-planned
// array passes every gate, replay and the order gates included, so the
// array is rewritten at every length and between graph replays; one whose
// planner is off by one fails the numerics gate. After the run the device
// holds every array at the last lengths, laid out as PlannedSpans says.
func TestPlannedArrays(t *testing.T) {
	for _, c := range []struct {
		lens string
		ok   bool
	}{{"nkv", true}, {"max(1, nkv - 1)", false}} {
		t.Run(c.lens, func(t *testing.T) {
			f := newFakeDevice()
			f.models["k"] = fakeModel{nkvFromPlanned: "lens"}
			b := fakeBackend(t, f)
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			p := plannedPoint(c.lens)
			rec, err := b.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			failed := failedKinds(rec.Gates)
			if c.ok {
				kinds := map[results.GateKind]bool{}
				for _, g := range rec.Gates {
					kinds[g.Kind] = true
				}
				if rec.Status != results.StatusOK || len(failed) > 0 || !kinds[results.GateReplay] || !kinds[results.GateReadOnly] {
					t.Fatalf("status %s (%s), failed %v, gates %v", rec.Status, rec.Error, failed, kinds)
				}
			} else if rec.Status != results.StatusGateFailed || !slices.ContainsFunc(failed, func(k string) bool { return strings.HasPrefix(k, "tolerance") }) {
				t.Fatalf("status %s, failed %v: want the tolerance gate to fail", rec.Status, failed)
			}
			w := b.ws
			if w == nil || w.planned == 0 {
				t.Fatal("no planned allocation")
			}
			pos := f.positions(w, 2)
			n0, n1 := int(pos[0])+1, int(pos[1])+1
			want, err := abi.PlannedBytes(w.l.dims(p.Config.Shape), p.Planned, w.l.dims(p.Config.Shape).Env(p.Config.Defines), []int{n0, n1})
			if err != nil {
				t.Fatal(err)
			}
			if got := f.at(w.planned)[:len(want)]; string(got) != string(want) {
				t.Errorf("planned arrays at lengths %d, %d: %v, want %v", n0, n1, got, want)
			}
		})
	}
}
