package gate

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestInvariancePositions: every position of a small batch, a bounded
// seeded set with the first and the last of a large one.
func TestInvariancePositions(t *testing.T) {
	if got := invariancePositions(4, nil); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("batch 4: %v", got)
	}
	p := invariancePositions(64, newRand(7))
	if len(p) != invarianceMaxPositions || p[0] != 0 || p[len(p)-1] != 63 || !slices.IsSorted(p) {
		t.Errorf("batch 64: %v", p)
	}
	if got := invarianceLengths([]int{1, 4, 7, 8, 9, 17, 29, 100}, 0, 1); !slices.Equal(got, []int{1, 100, 9}) {
		t.Errorf("lengths %v", got)
	}
	if got := invarianceLengths([]int{1, 4, 7, 8, 9, 17, 29, 100}, 16, 4); !slices.Equal(got, []int{4, 100, 17}) {
		t.Errorf("paged lengths %v", got)
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }
