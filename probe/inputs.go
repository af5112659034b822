package probe

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// Read-only inputs.
//
// A kernel may only read q, K, V, the lengths and the scales (abi.RoleInput in
// the buffer table). One that writes them (an in-place dequantisation, a
// length it decrements, the new token's row appended past the context)
// computes its own gate launch right and corrupts what an engine holds.
// So the host keeps a record of what each read-only buffer holds (the
// workspace's random fill, overlaid with every upload since), the device
// digests each buffer in 1 MiB segments before a launch, and digests it
// again after: a segment whose digest changed is read back and compared
// with the record, which names the first changed element. Digests, not
// copies: K and V are gigabytes at an engine's capacity, and a digest
// reads them at device bandwidth (about a millisecond per 4 GiB on the
// H200) where a copy back would take a second per check.

// digestSeg is the span of one digest, in bytes.
const digestSeg = 1 << 20

// An inputCopy is the host's record of one read-only buffer.
type inputCopy struct {
	name string
	p    cuda.DevPtr
	n    int64
	elt  int // element size, to name the first changed element
	// fill writes the allocation's fill of bytes [off, off+len(b)); off
	// is a multiple of elt.
	fill func(off int64, b []byte)
	// writes are the writes since the fill, oldest first, each holding
	// the bytes written (not a copy: every caller hands over bytes it
	// never changes again); one wholly covered by a later write is
	// dropped, so that uploads of one set after another do not pile up.
	writes []inputWrite
	// ref is the digest of each segment when the buffer was last sealed;
	// nil after a write, until the next seal.
	ref []uint64
	// page is a paged K's or V's page bytes, 0 for every other buffer;
	// pages then holds each page's bytes as last written (nil: the fill),
	// in place of writes: a paged cache is written a page at a time, tens
	// of thousands of pages at batch 16, which the list of writes would
	// scan once per write.
	page  int64
	pages [][]byte
	// fillChunks are pieces of the fill kept for pieces, by chunk
	// (inputpieces.go); fillKept their bytes.
	fillChunks map[int64][]byte
	fillKept   int64
}

// An inputWrite is b written at byte offset off.
type inputWrite struct {
	off int64
	b   []byte
}

// initInputs makes the record of every read-only buffer as allocWorkspace
// filled it.
func (w *workspace) initInputs() {
	w.inputs = nil
	fills := map[string]bufferFill{}
	for _, f := range w.fills() {
		fills[f.name] = f
	}
	for _, e := range w.table() {
		if e.role != abi.RoleInput || e.n == 0 {
			continue
		}
		c := &inputCopy{name: e.name, p: *e.p, n: e.n, elt: 4}
		if f, ok := fills[e.name]; ok {
			c.elt = f.t.Bytes
			// The random fill, and over it the word fills of this buffer
			// (a paged pool's spare pages).
			var words []wordFill
			for _, wf := range w.workspaceFills() {
				if wf.p >= c.p && wf.p < c.p+devOff(c.n) {
					words = append(words, wf)
				}
			}
			c.fill = func(off int64, b []byte) {
				fillValues(b, f.t, f.seed, off/int64(f.t.Bytes))
				for _, wf := range words {
					lo, hi := max(off, int64(wf.p-c.p)), min(off+int64(len(b)), int64(wf.p-c.p)+wf.n)
					for i := lo; i < hi; i++ {
						b[i-off] = byte(wf.word >> (8 * ((i - int64(wf.p-c.p)) % 4)))
					}
				}
			}
		} else if e.name == "kv_scale" {
			c.fill = func(_ int64, b []byte) { copy(b, scaleFill(int64(len(b)), w.l.kv.Scaled)) }
		} else {
			c.fill = func(_ int64, b []byte) { clear(b) } // positions: cleared at allocation
		}
		if pool := w.paged(); pool != nil && (e.name == "k" || e.name == "v") {
			c.page, c.pages = w.l.pageB, make([][]byte, (c.n+w.l.pageB-1)/w.l.pageB)
		}
		w.inputs = append(w.inputs, c)
	}
}

// input returns the record of the read-only buffer at p, or nil.
func (w *workspace) input(p cuda.DevPtr) *inputCopy {
	for _, c := range w.inputs {
		if c.p == p {
			return c
		}
	}
	return nil
}

// bytesAt returns what bytes [off, off+n) of the buffer must hold: the
// fill, then every write over them in order.
func (c *inputCopy) bytesAt(off, n int64) []byte {
	out := make([]byte, n)
	if c.page > 0 {
		for p := off / c.page; p*c.page < off+n; p++ {
			lo, hi := max(off, p*c.page), min(off+n, (p+1)*c.page)
			if b := c.pages[p]; b != nil {
				copy(out[lo-off:hi-off], b[lo-p*c.page:hi-p*c.page])
			} else {
				c.fill(lo, out[lo-off:hi-off])
			}
		}
		return out
	}
	// From the last write that covers the whole range, if one does: the
	// fill under it is never drawn.
	first, covered := 0, false
	for i := len(c.writes) - 1; i >= 0 && !covered; i-- {
		if w := c.writes[i]; w.off <= off && w.off+int64(len(w.b)) >= off+n {
			first, covered = i, true
		}
	}
	if !covered {
		c.fill(off, out)
	}
	for _, w := range c.writes[first:] {
		lo, hi := max(off, w.off), min(off+n, w.off+int64(len(w.b)))
		if lo < hi {
			copy(out[lo-off:hi-off], w.b[lo-w.off:hi-w.off])
		}
	}
	return out
}

// pageAt returns what the n bytes at off hold: where they are a page of
// a paged record written whole, that page's bytes, shared, not a copy.
func (c *inputCopy) pageAt(off, n int64) []byte {
	if c.page == n && off%n == 0 && c.pages[off/n] != nil {
		return c.pages[off/n]
	}
	return c.bytesAt(off, n)
}

// pageSlot is the record of the whole page at off of a paged record: its
// bytes, or nil where it holds the fill. setPage puts such a record back.
func (c *inputCopy) pageSlot(off int64) []byte { return c.pages[off/c.page] }

func (c *inputCopy) setPage(off int64, b []byte) {
	c.pages[off/c.page] = b
	c.ref = nil
}

// expected returns what segment i of the buffer must hold.
func (c *inputCopy) expected(i int64) []byte {
	lo := i * digestSeg
	return c.bytesAt(lo, min(digestSeg, c.n-lo))
}

// wrote records that b was written at byte offset off.
func (c *inputCopy) wrote(off int64, b []byte) {
	end := off + int64(len(b))
	if c.page > 0 {
		for p := off / c.page; p*c.page < end; p++ {
			lo, hi := max(off, p*c.page), min(end, (p+1)*c.page)
			if lo == p*c.page && hi == (p+1)*c.page {
				c.pages[p] = b[lo-off : hi-off] // a whole page: its bytes, not a copy
				continue
			}
			pb := c.bytesAt(p*c.page, c.page)
			copy(pb[lo-p*c.page:], b[lo-off:hi-off])
			c.pages[p] = pb
		}
		c.ref = nil
		return
	}
	keep := c.writes[:0]
	for _, w := range c.writes {
		if w.off < off || w.off+int64(len(w.b)) > end {
			keep = append(keep, w)
		}
	}
	clear(c.writes[len(keep):])
	c.writes = append(keep, inputWrite{off, b})
	c.ref = nil
}

// writeInput writes b at byte offset off of the buffer at p, and keeps
// the record of a read-only buffer.
func (r *session) writeInput(p cuda.DevPtr, off int64, b []byte) error {
	if err := r.b.gpu.write(p+devOff(off), b); err != nil {
		return err
	}
	if c := r.ws.input(p); c != nil {
		c.wrote(off, b)
	}
	return nil
}

// sealInputs digests every read-only buffer written since its last seal:
// the bytes a launch must leave as they are.
func (r *session) sealInputs() error {
	for _, c := range r.ws.inputs {
		if c.ref != nil {
			continue
		}
		d, err := r.b.gpu.digest(c.p, c.n, digestSeg)
		if err != nil {
			return fmt.Errorf("digesting %s: %w", c.name, err)
		}
		c.ref = d
	}
	return nil
}

// checkInputs digests every read-only buffer after a launch (made at nkv,
// its outputs read back, so the stream is idle) and flags each that
// changed. A changed buffer is put back as the record has it, so that the
// gates after this one, and the next point on this workspace, start from
// the uploaded bytes.
func (r *session) checkInputs(nkv int) error {
	for _, c := range r.ws.inputs {
		if c.ref == nil {
			continue
		}
		now, err := r.b.gpu.digest(c.p, c.n, digestSeg)
		if err != nil {
			return fmt.Errorf("digesting %s after a launch: %w", c.name, err)
		}
		if slices.Equal(now, c.ref) {
			continue
		}
		first := true
		for i := range now {
			if now[i] == c.ref[i] {
				continue
			}
			want := c.expected(int64(i))
			if first {
				got := make([]byte, len(want))
				if err := r.b.gpu.read(got, c.p+devOff(int64(i)*digestSeg)); err != nil {
					return fmt.Errorf("reading back %s: %w", c.name, err)
				}
				r.found.Flag(r.inputGate(c, nkv, int64(i)*digestSeg, want, got))
				first = false
			}
			if err := r.b.gpu.write(c.p+devOff(int64(i)*digestSeg), want); err != nil {
				return fmt.Errorf("restoring %s: %w", c.name, err)
			}
		}
		c.ref = nil
	}
	return r.sealInputs()
}

// inputGate is the failure of a read-only buffer whose segment at byte
// base holds got instead of want.
func (r *session) inputGate(c *inputCopy, nkv int, base int64, want, got []byte) results.Gate {
	g := results.Gate{Kind: results.GateReadOnly, NKV: nkv, Seed: r.p.Seed, Buffer: c.name, FirstDiff: -1}
	diff := 0
	for j := range want {
		if j < len(got) && want[j] != got[j] {
			if g.FirstDiff < 0 {
				g.FirstDiff = int(base) + j
			}
			diff++
		}
	}
	g.DiffBytes = diff
	if g.FirstDiff < 0 {
		// The digest changed and the bytes did not: the segment changed
		// between the digest and the read (a kernel still running).
		g.Detail = fmt.Sprintf("the kernel's read-only input %s changed while it was read back", c.name)
		return g
	}
	e := int64(g.FirstDiff) / int64(c.elt)
	j := e*int64(c.elt) - base
	g.Detail = fmt.Sprintf("the kernel wrote its read-only input %s: element %d (%s) was %x, is %x",
		c.name, e, r.elementName(c.name, e), want[j:j+int64(c.elt)], got[j:j+int64(c.elt)])
	return g
}

// elementName says where element e of a buffer sits in the shape.
func (r *session) elementName(buf string, e int64) string {
	s := r.p.Config.Shape
	b, kvh, d := int64(s.Batch), int64(s.KVHeads), int64(s.HeadDim)
	switch buf {
	case "q":
		return fmt.Sprintf("sequence %d, head %d, dim %d", e/(int64(s.Heads)*d), e/d%int64(s.Heads), e%d)
	case "k", "v":
		kp, vp := r.ws.placements(s)
		if buf == "v" {
			return vp.Locate(e)
		}
		return kp.Locate(e)
	case "pages":
		return pageElementName(r.l.dims(s), e)
	case "positions":
		if e < b {
			return fmt.Sprintf("positions[%d]", e)
		}
		return fmt.Sprintf("seqlens[%d]", e-b)
	case "kv_scale":
		if e < kvh {
			return fmt.Sprintf("K scale of KV head %d", e)
		}
		return fmt.Sprintf("V scale of KV head %d", e-kvh)
	}
	return fmt.Sprintf("byte %d", e)
}

// afterLaunch runs the checks that follow every launch whose outputs were
// read back: read-only inputs and guard regions.
func (r *session) afterLaunch(nkv int) error {
	r.found.Checked()
	if err := r.checkInputs(nkv); err != nil {
		return err
	}
	return r.checkGuards(nkv)
}
