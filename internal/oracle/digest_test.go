package oracle

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/golden"
)

// The inputs are part of what a gate verdict means: the same shape, rows
// and seed must give the same bytes on any machine, with any number of
// cores, in every release. The digests pin them; a change to the
// generator must say so by updating the golden file (-update).
func TestInputDigests(t *testing.T) {
	var b strings.Builder
	for _, s := range []abi.Shape{
		{Name: "f16", Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "f16", Batch: 3, Capacity: 4096},
		{Name: "f32", Heads: 4, KVHeads: 4, HeadDim: 32, KVDtype: "f32", Batch: 2, Capacity: 4096},
	} {
		lengths := make([]int, s.Batch)
		for i := range lengths {
			lengths[i] = 700 - 100*i
		}
		for _, set := range Sets {
			in, err := GenerateSet(set, s, 700, lengths, 8, 3)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			for _, q := range in.Q {
				binary.Write(h, binary.LittleEndian, math.Float32bits(q))
			}
			h.Write(in.KBytes)
			h.Write(in.VBytes)
			fmt.Fprintf(&b, "%s %s %x\n", s.Name, set, h.Sum(nil)[:12])
		}
	}
	golden.Check(t, "testdata/digests.golden", []byte(b.String()))
}
