package abi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/kvtype"
)

// A Shape is the attention problem shape, independent of the context
// length: what every buffer's size and every shape scalar derive from.
// Records carry it as their config's "shape" (package results).
type Shape struct {
	Name    string `json:"name,omitempty"` // the spec's label, e.g. "7b"
	Heads   int    `json:"heads"`          // query heads
	KVHeads int    `json:"kv_heads"`       // key/value heads (GQA groups)
	HeadDim int    `json:"head_dim"`
	KVDtype Dtype  `json:"kv_dtype"` // a kvtype name: f32, f16, bf16, fp8e4m3
	// KVScale is how the gate inputs of a scaled kv_dtype choose their
	// scales (kvtype.ScaleTensor or ScaleHead); empty for the other types,
	// so that their records read as before.
	KVScale  string `json:"kv_scale,omitempty"`
	Batch    int    `json:"batch"`
	Capacity int    `json:"capacity"` // rows allocated per sequence in K and V
	// Attention are the options that change the math (soft-cap, ALiBi,
	// sinks, window, q_len, MLA, lse); zero for plain decode attention.
	Attention Attention `json:"attention,omitzero"`
}

// KV is the shape's K/V type with its kv_scale mode when it has one
// ("fp8e4m3/head"), the type alone otherwise: how hashes and labels tell
// two fp8 shapes apart that differ only in their scales, while every other
// shape reads as it did before the mode existed.
func (s Shape) KV() string {
	if s.KVScale == "" {
		return string(s.KVDtype)
	}
	return string(s.KVDtype) + "/" + s.KVScale
}

// KVType is the shape's K/V element type. A shape comes from a spec or a
// record, both of which refuse an unknown kv_dtype when decoded, so an
// unknown one here is a programming error, never read as f32.
func (s Shape) KVType() *kvtype.Type { return s.KVDtype.Type() }

// Group is the number of query heads per KV head.
func (s Shape) Group() int { return s.Heads / s.KVHeads }

// UnmarshalJSON decodes a recorded shape and refuses a kv_dtype that is
// not a K/V type: such a record cannot be sized, gated or labelled, and
// reading it as f32 would be a guess. An empty one is a shape not
// recorded at all (a record without a config), which round-trips as it
// is; KVType panics on it rather than guess.
func (s *Shape) UnmarshalJSON(b []byte) error {
	type plain Shape
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if _, err := kvtype.Lookup(string(p.KVDtype)); err != nil && p.KVDtype != "" {
		return fmt.Errorf("shape %q: %w", p.Name, err)
	}
	*s = Shape(p)
	return nil
}

// A Dtype names an element type by its kvtype name: the K/V type of a
// shape, or the type of q and out in a signature's io.
type Dtype string

// The dtypes by name.
const (
	F32     Dtype = "f32"
	F16     Dtype = "f16"
	BF16    Dtype = "bf16"
	FP8E4M3 Dtype = "fp8e4m3"
)

// IODtypes are the types q and out may take in a signature's io.
var IODtypes = []Dtype{F32, F16, BF16}

// Type is the element type of the name. Every Dtype is decoded by a spec
// or a record that checks it (ParseDtype, Shape.UnmarshalJSON), so an
// unknown name is a programming error: it panics rather than being read
// as f32.
func (d Dtype) Type() *kvtype.Type {
	t, err := kvtype.Lookup(string(d))
	if err != nil {
		panic("abi: " + err.Error() + " (a dtype must be decoded by spec or results, which refuse it)")
	}
	return t
}

// Bytes is the size of one element.
func (d Dtype) Bytes() int { return d.Type().Bytes }

// ParseIODtype parses the dtype of q or out.
func ParseIODtype(s string) (Dtype, error) {
	for _, d := range IODtypes {
		if string(d) == s {
			return d, nil
		}
	}
	return "", fmt.Errorf("want one of %s, got %q", joinDtypes(IODtypes), s)
}

func joinDtypes(ds []Dtype) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}

// PartialStride is PSTR, the float stride of one partial slot
// (kernels/abi.cuh): the HEAD_DIM accumulator, then m and l, padded so
// that every slot starts 16-byte aligned for float4 access.
func PartialStride(headDim int) int { return headDim + 4 }
