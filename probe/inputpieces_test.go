package probe

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestPiecesAreBytesAt: the pieces of any range of a record, laid in
// order, are the bytes bytesAt gives, for a contiguous buffer with
// overlapping writes and for a paged one with whole and partial pages;
// and writing them back leaves the record saying the same.
func TestPiecesAreBytesAt(t *testing.T) {
	t.Parallel()
	const n = 3*fillChunk + 4096
	fill := func(off int64, b []byte) {
		for i := range b {
			b[i] = byte((off+int64(i))*31/7 + 3)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, page := range []int64{0, 16 << 10} {
		c := &inputCopy{name: "k", n: n, elt: 2, fill: fill, page: page}
		if page > 0 {
			c.pages = make([][]byte, (n+page-1)/page)
		}
		for range 60 {
			off := 2 * rng.Int64N(n/2)
			b := make([]byte, 2*rng.Int64N(min(n-off, 3<<20)/2+1))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			c.wrote(off, b)
		}
		check := func(off, m int64) {
			t.Helper()
			var out []byte
			at := off
			for _, p := range c.pieces(off, m) {
				if p.off != at {
					t.Fatalf("page %d: piece at %d, want %d", page, p.off, at)
				}
				out = append(out, p.b...)
				at += int64(len(p.b))
			}
			if want := c.bytesAt(off, m); !bytes.Equal(out, want) {
				t.Fatalf("page %d: pieces of [%d, %d) differ from bytesAt", page, off, off+m)
			}
		}
		for range 200 {
			off := 2 * rng.Int64N(n/2)
			check(off, 2*rng.Int64N((n-off)/2+1))
		}
		check(0, n)
		// Writing the pieces back changes nothing the record says.
		before := c.bytesAt(0, n)
		for _, p := range c.pieces(fillChunk-100, 2*fillChunk) {
			c.wrote(p.off, p.b)
		}
		if !bytes.Equal(c.bytesAt(0, n), before) {
			t.Fatalf("page %d: writing the pieces back changed the record", page)
		}
	}
}
