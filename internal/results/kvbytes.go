package results

// TimedLengths are the context lengths a point's timed launches run at,
// one per sequence: Lengths when the batch is ragged, else NKV for every
// sequence.
func (c *Config) TimedLengths() []int {
	if len(c.Lengths) == c.Shape.Batch {
		return c.Lengths
	}
	out := make([]int, max(c.Shape.Batch, 0))
	for i := range out {
		out[i] = c.NKV
	}
	return out
}

// KVBytes is the K+V bytes a point's timed launch reads once, the figure
// a Measurement records as Bytes: 2 × Σ nkv_b rows of kv_heads × head_dim
// elements (plus each KV head's two scales for a scaled type). It is the
// one home of that formula: the probe records it, and evidence holds a
// record's Bytes to it, so that a configuration edited after the fact
// (its nkv, its shape) no longer matches what its samples measured.
// 0 for a configuration without a K/V shape (no dtype, no KV heads), which
// no decoded record has.
func (c *Config) KVBytes() int64 {
	if c.Shape.KVDtype == "" || c.Shape.KVHeads < 1 || c.Shape.HeadDim < 1 {
		return 0
	}
	var rows int64
	for _, n := range c.TimedLengths() {
		rows += int64(n)
	}
	s := &c.Shape
	t := s.KVType()
	n := 2 * rows * int64(s.KVHeads) * int64(s.HeadDim) * int64(t.Bytes)
	if t.Scaled {
		n += 2 * int64(s.KVHeads) * 4 // the scales, read once
	}
	return n
}
