package oracle

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/kvtype"
)

// The gates' inputs and the oracle's outputs, as the gates derive them:
// every set of every element type and option from one base drawn longer
// than the set (FromBase of a Prefix), and the references at several
// lengths at once, tiled past the drawn rows to the capacity. The
// committed results were judged with these bytes; a faster generator,
// a cache or a faster oracle must leave every digest as it is.
func TestDerivedDigests(t *testing.T) {
	var b strings.Builder
	for _, s := range []abi.Shape{
		{Name: "f16", Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "f16", Batch: 3, Capacity: 4096},
		{Name: "bf16", Heads: 8, KVHeads: 4, HeadDim: 32, KVDtype: "bf16", Batch: 2, Capacity: 4096},
		{Name: "e4m3-head", Heads: 8, KVHeads: 4, HeadDim: 32, KVDtype: "fp8e4m3", KVScale: kvtype.ScaleHead, Batch: 2, Capacity: 4096},
		{Name: "e4m3-tensor", Heads: 4, KVHeads: 2, HeadDim: 32, KVDtype: "fp8e4m3", KVScale: kvtype.ScaleTensor, Batch: 2, Capacity: 4096},
		optShape,
		mlaShape,
		{Name: "sinks-window", Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "f16", Batch: 2, Capacity: 4096,
			Attention: abi.Attention{Sinks: true, Window: 400, QLen: 3, LSE: abi.LSELog2}},
		{Name: "buffer-slopes", Heads: 6, KVHeads: 2, HeadDim: 16, KVDtype: "f32", Batch: 2, Capacity: 4096,
			Attention: abi.Attention{ALiBi: abi.ALiBiBuffer, Sinks: true, LSE: abi.LSENatural}},
	} {
		const rows, splits, seed = 600, 8, 11
		base, err := Generate(s, rows+37, seed)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s base %s\n", s.Name, inputsDigest(base))
		nkvs := []int{rows, 1, 5, 77, 300}
		for _, set := range SetsFor(s) {
			lengths := make([]int, s.Batch)
			for i := range lengths {
				lengths[i] = max(s.Attention.Queries(), rows-97*i)
			}
			in, err := FromBase(set, base, rows, lengths, splits)
			if err != nil {
				t.Fatal(err)
			}
			var launches [][]int
			for _, n := range nkvs {
				l := make([]int, s.Batch)
				for i := range l {
					l[i] = max(s.Attention.Queries(), n-n*i/(2*s.Batch))
				}
				if !set.PerLength() || slices.Max(l) <= rows {
					launches = append(launches, l)
				}
			}
			outs, err := References(in, launches)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s %s refs %s\n", s.Name, set, inputsDigest(in), outputsDigest(outs))
		}
		// The long gates: the uniform set tiled to the capacity, at
		// lengths that wrap once, many times, and the capacity.
		tiled := *base.Prefix(rows)
		tiled.Tiled = true
		var launches [][]int
		for _, n := range []int{rows + 1, 2*rows + 13, s.Capacity - 1, s.Capacity} {
			l := make([]int, s.Batch)
			for i := range l {
				l[i] = n - i*n/(3*s.Batch)
			}
			launches = append(launches, l, slices.Repeat([]int{n}, s.Batch))
		}
		outs, err := References(&tiled, launches)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s tiled refs %s\n", s.Name, outputsDigest(outs))
	}
	golden.Check(t, "testdata/derived-digests.golden", []byte(b.String()))
}

// inputsDigest covers every byte a set uploads and every value the
// oracle reads of it.
func inputsDigest(in *Inputs) string {
	h := sha256.New()
	for _, q := range in.Q {
		binary.Write(h, binary.LittleEndian, math.Float32bits(q))
	}
	h.Write(in.KBytes)
	h.Write(in.VBytes)
	h.Write(in.ScaleBytes())
	h.Write(in.HeadParamBytes())
	for _, x := range [][]float64{in.K, in.V, in.KScale, in.VScale, in.Slopes, in.Sinks} {
		binary.Write(h, binary.LittleEndian, x)
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:10])
}

// outputsDigest covers every bit of the references' outputs and lse.
func outputsDigest(outs []Output) string {
	h := sha256.New()
	for _, o := range outs {
		binary.Write(h, binary.LittleEndian, o.Out)
		binary.Write(h, binary.LittleEndian, o.LSE)
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:10])
}
