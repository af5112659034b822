package search

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// The identities a search groups points by live here, and only here, so
// that they can follow a shared identity of shapes and configurations
// without touching the strategies.

// configKey is a configuration's identity (every nkv of it is one
// configuration): the shape's (abi.Shape.Identity) and its label, which a
// spec may give two shapes of one identity, the variant and the defines.
func configKey(c *results.Config) string {
	return shapeKey(c.Shape) + "\x00" + c.Variant + "\x00" + c.Defines.String()
}

// shapeKey is a shape's identity and its label.
func shapeKey(s results.Shape) string { return s.Name + "\x00" + s.Identity() }

func configLabel(p *plan.Point) string {
	// The shape already says the derived defines.
	parts := []string{p.Config.Shape.Name, p.Config.Variant, p.Config.Defines.Own().String()}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// A Cell is one entry of a dispatch table: a shape (its batch included)
// at one nkv. The table picks the fastest configuration of each cell, so a
// search is judged cell by cell.
type Cell struct {
	Shape string // shapeKey
	NKV   int
}

// cellOf is the cell of a point's configuration.
func cellOf(c *results.Config) Cell { return Cell{Shape: shapeKey(c.Shape), NKV: c.NKV} }

// gateGroup is what the gates of a point are paid per: one compiled
// kernel at one launch geometry.
func gateGroup(c *results.Config) string {
	return fmt.Sprintf("%s\x00%v\x00%v\x00%v\x00%v", configKey(c), c.Grid, c.Block, c.CombineGrid, c.CombineBlock)
}
