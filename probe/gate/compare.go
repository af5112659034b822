package gate

import (
	"encoding/binary"
	"math"

	"github.com/ktune/ktune/internal/abi"
)

// unwritten counts the 4-byte words of buf, at the word indices words
// yields, that still hold the poison pattern; first is the byte offset of
// the first one, −1 if none.
func unwritten(buf []byte, words func(yield func(int) bool)) (n, first int) {
	first = -1
	for w := range words {
		if binary.LittleEndian.Uint32(buf[4*w:]) == Poison {
			if first < 0 {
				first = 4 * w
			}
			n++
		}
	}
	return n, first
}

// outWords yields every word of an out buffer of n floats.
func outWords(n int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := 0; i < n; i++ {
			if !yield(i) {
				return
			}
		}
	}
}

// partialWords yields the words of a partial buffer the ABI requires a
// kernel to write: p[0] (max), p[1] (sum) and p[4 .. 4+headDim) of every
// (sequence, split, head) slot. The padding p[2..3] is left out.
func partialWords(slots, headDim int) func(func(int) bool) {
	pstr := abi.PartialStride(headDim)
	return func(yield func(int) bool) {
		for s := 0; s < slots; s++ {
			base := s * pstr
			if !yield(base) || !yield(base+1) {
				return
			}
			for i := 0; i < headDim; i++ {
				if !yield(base + 4 + i) {
					return
				}
			}
		}
	}
}

// diffBytes counts the bytes at which a and b differ (a length difference
// counts as differing bytes); first is the first differing index, −1 if
// none.
func diffBytes(a, b []byte) (n, first int) {
	first = -1
	m := min(len(a), len(b))
	for i := 0; i < m; i++ {
		if a[i] != b[i] {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if len(a) != len(b) {
		if first < 0 {
			first = m
		}
		n += max(len(a), len(b)) - m
	}
	return n, first
}

// floats decodes little-endian float32s.
func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
