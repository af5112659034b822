package report

import (
	"fmt"

	"github.com/ktune/ktune/internal/results"
)

// ShapeDescription spells a shape out for section headings: "28 heads,
// 4 KV heads, head_dim 128, f16, batch 1, capacity 131072".
func ShapeDescription(s results.Shape) string {
	return fmt.Sprintf("%d heads, %d KV heads, head_dim %d, %s, batch %d, capacity %d",
		s.Heads, s.KVHeads, s.HeadDim, s.KV(), s.Batch, s.Capacity)
}
