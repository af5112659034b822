// Package oracle is ktune's numerics reference: a float64 CPU computation
// of split-free decode attention, the seeded inputs the gates feed to both
// the device and the reference, their quantization to the KV element type
// (whose conversions are package kvtype's), and the error metrics a
// tolerance gate compares.
//
// The reference deliberately computes one plain softmax over all rows of a
// sequence (no splits, no online rescaling) in float64, so that it shares
// no summation order, and no bug, with any kernel it judges.
package oracle

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// Reference returns the reference output of one launch at context
// lengths nkv (one per sequence): References' Out for that launch alone,
// bit for bit.
func Reference(in *Inputs, nkv []int) ([]float64, error) {
	o, err := References(in, [][]int{nkv})
	if err != nil {
		return nil, err
	}
	return o[0].Out, nil
}

// checkShape rejects shapes the ABI cannot express.
func checkShape(s abi.Shape) error {
	switch {
	case s.Batch <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0:
		return fmt.Errorf("oracle: shape %+v: batch, heads, kv_heads and head_dim must be positive", s)
	case s.Heads%s.KVHeads != 0:
		return fmt.Errorf("oracle: shape %+v: heads %d is not a multiple of kv_heads %d", s, s.Heads, s.KVHeads)
	}
	t, err := kvtype.Lookup(string(s.KVDtype))
	if err == nil {
		err = t.CheckScale(s.KVScale)
	}
	if err != nil {
		return fmt.Errorf("oracle: shape %+v: %w", s, err)
	}
	return nil
}
