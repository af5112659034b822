package probe

// What a read-only buffer held, without a copy.
//
// The stale gate overwrites the rows past every length and then writes
// back what they held. Built as one fresh copy per span (bytesAt), that
// was tens of MB per sequence and length at batch 16, most of it the
// workspace's random fill generated again element by element: the
// largest part of a later kernel's stale gate. pieces gives the same
// bytes as slices of what the record already keeps (the uploads' bytes,
// a page's bytes) and of the fill, generated once per chunk and kept.

// fillChunk is the span of one kept piece of a contiguous buffer's fill.
const fillChunk = 1 << 20

// maxFillKept bounds the fill a buffer's record keeps; past it, pieces
// of the fill are generated afresh.
const maxFillKept = 512 << 20

// pieces returns writes whose bytes, laid at their offsets in order,
// are what bytes [off, off+n) of the buffer must hold (bytesAt's bytes).
// Their bytes are the record's own or kept fill and never change: they
// may be written and recorded as they are.
func (c *inputCopy) pieces(off, n int64) []inputWrite {
	if c.page > 0 {
		var out []inputWrite
		for p := off / c.page; p*c.page < off+n; p++ {
			lo, hi := max(off, p*c.page), min(off+n, (p+1)*c.page)
			if b := c.pages[p]; b != nil {
				out = append(out, inputWrite{lo, b[lo-p*c.page : hi-p*c.page]})
			} else {
				out = append(out, c.fillPieces(lo, hi)...)
			}
		}
		return out
	}
	// The range as runs, each from the last write over it (nil: the
	// fill), laid write by write in the record's order.
	type run struct {
		lo, hi int64
		w      *inputWrite
	}
	runs := []run{{off, off + n, nil}}
	for i := range c.writes {
		w := &c.writes[i]
		wlo, whi := w.off, w.off+int64(len(w.b))
		if whi <= off || wlo >= off+n {
			continue
		}
		var next []run
		for _, r := range runs {
			if r.hi <= wlo || r.lo >= whi {
				next = append(next, r)
				continue
			}
			if r.lo < wlo {
				next = append(next, run{r.lo, wlo, r.w})
			}
			next = append(next, run{max(r.lo, wlo), min(r.hi, whi), w})
			if r.hi > whi {
				next = append(next, run{whi, r.hi, r.w})
			}
		}
		runs = next
	}
	var out []inputWrite
	for _, r := range runs {
		if r.w == nil {
			out = append(out, c.fillPieces(r.lo, r.hi)...)
			continue
		}
		out = append(out, inputWrite{r.lo, r.w.b[r.lo-r.w.off : r.hi-r.w.off]})
	}
	return out
}

// fillPieces are the fill of bytes [lo, hi), one piece per fill chunk
// it touches, each a slice of the chunk kept for the buffer. A paged
// buffer's chunk is a page: the stale rows of a shuffled pool are pages
// scattered over the whole buffer, one per 1 MiB or more.
func (c *inputCopy) fillPieces(lo, hi int64) []inputWrite {
	size := int64(fillChunk)
	if c.page > 0 {
		size = c.page
	}
	var out []inputWrite
	for ch := lo / size; ch*size < hi; ch++ {
		base := ch * size
		a, b := max(lo, base), min(hi, base+size)
		chunk := c.fillChunks[ch]
		if chunk == nil {
			chunk = make([]byte, min(size, c.n-base))
			c.fill(base, chunk)
			if c.fillKept+int64(len(chunk)) <= maxFillKept {
				if c.fillChunks == nil {
					c.fillChunks = map[int64][]byte{}
				}
				c.fillChunks[ch] = chunk
				c.fillKept += int64(len(chunk))
			}
		}
		out = append(out, inputWrite{a, chunk[a-base : b-base]})
	}
	return out
}
