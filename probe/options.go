package probe

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
)

// checkOptions refuses what the probe cannot gate: a latent mla cache
// whose V the oracle reads from K's first dv channels must have dv ≤
// head_dim (the spec refuses it too; a record built by hand may not).
func checkOptions(s abi.Shape) error {
	if m := s.Attention.MLA; m.DV > s.HeadDim && m.Layout == abi.MLALatent {
		return fmt.Errorf("shape %s: mla dv %d is wider than the latent K rows (head_dim %d)", s.Name, m.DV, s.HeadDim)
	}
	return nil
}
