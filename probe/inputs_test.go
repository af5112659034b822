package probe

import (
	"bytes"
	"testing"
)

// TestInputRecord: the record of a read-only buffer is its fill under
// every write since, newest on top; a write wholly covered by a later one
// is dropped, so set after set of uploads keeps one entry.
func TestInputRecord(t *testing.T) {
	fill := func(off int64, b []byte) {
		for i := range b {
			b[i] = byte(off + int64(i))
		}
	}
	c := &inputCopy{name: "k", n: 3 * digestSeg, elt: 2, fill: fill}
	want := make([]byte, c.n)
	fill(0, want)
	write := func(off int64, b []byte) {
		c.wrote(off, b)
		copy(want[off:], b)
	}
	write(10, bytes.Repeat([]byte{0xaa}, 100))
	write(digestSeg-4, bytes.Repeat([]byte{0xbb}, 8)) // across a segment boundary
	write(0, bytes.Repeat([]byte{0xcc}, 50))          // under the first, partly
	for i := range 3 {
		write(0, bytes.Repeat([]byte{byte(i)}, 200)) // covers both, then itself
	}
	if len(c.writes) != 2 {
		t.Errorf("%d writes kept, want 2 (the one across the boundary and the last upload)", len(c.writes))
	}
	for _, r := range [][2]int64{{0, c.n}, {5, 300}, {digestSeg - 8, 16}, {150, 100}} {
		if got := c.bytesAt(r[0], r[1]); !bytes.Equal(got, want[r[0]:r[0]+r[1]]) {
			t.Errorf("bytes [%d, %d) differ from what was written", r[0], r[0]+r[1])
		}
	}
	for i := range int64(3) {
		if !bytes.Equal(c.expected(i), want[i*digestSeg:(i+1)*digestSeg]) {
			t.Errorf("segment %d differs", i)
		}
	}
	if c.ref != nil {
		t.Error("a write left the digests sealed")
	}
}
