package plan

import (
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// A shape with a window or q_len > 1 gates at the lengths that put the
// window's edge and the new tokens on split boundaries; a plain shape's
// lengths are untouched.
func TestOptionGateNKV(t *testing.T) {
	s := abi.Shape{Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: abi.F16, Batch: 1, Capacity: 4096}
	base := []int{1, 29, 512}
	if got := optionGateNKV(base, s, 8); !slices.Equal(got, base) {
		t.Errorf("plain shape: %v", got)
	}
	s.Attention = abi.Attention{Window: 100, QLen: 4}
	got := optionGateNKV(base, s, 8)
	if got[0] != 4 {
		t.Errorf("lengths %v: want none below q_len 4", got)
	}
	for _, n := range []int{115, 5} { // a window length and a causal one at 8 splits
		if !slices.Contains(got, n) {
			t.Errorf("lengths %v: want %d", got, n)
		}
	}
}
