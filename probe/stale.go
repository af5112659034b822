package probe

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/plan"
)

// Memory as an engine holds it.
//
// Past each sequence's length an engine's cache holds whatever was there:
// uninitialised pages, a recycled sequence's rows, speculative drafts,
// NaN. The workspace's random fill is finite everywhere, so a kernel that
// loads a tile past the length and masks it by multiplying with a zero
// weight (0·NaN = NaN, 0·Inf = NaN), or takes the tile's maximum before
// masking, is right on it. The stale gate launches again on the uniform
// inputs with the rows past each length cycling through NaN, ±Inf and
// ±the largest finite value of the KV type, and the outputs must be the
// bytes of the launch over the finite fill: rows past the length may not
// change a single bit.
//
// Some engines' kernels read past the length by design, relying on what
// their cache holds there: llama.cpp's vector kernel reads rows up to a
// multiple of 256 and masks them by adding −inf to their scores, and its
// cache is cleared at allocation, so a cell past the length holds zeros
// or an earlier finite row, never NaN or Inf. Its spec may declare so
// (gates.stale: {rows: finite, reason}, plan.StaleWaiver): the gate then
// writes the finite patterns alone, still requires every output bit to
// be the same, and every stale gate of the record names the declaration
// (its waiver), as the record's waivers do.

// staleRows is the least number of rows past each length that the stale
// gate overwrites: more than any tile or prefetch distance of a kernel
// ktune runs. Two chunks past the length are covered too, for a kernel
// whose bound is off by a chunk.
const staleRows = 1024

// staleBits are the bit patterns of the stale rows for KV type t, cycled
// row by row. With nothing declared about the rows past each length
// (rows ""): quiet NaN, +Inf, −Inf, +max, −max (fp8e4m3 has no Inf: its
// NaN codes and ±448). Where the spec declares that the engine's cache
// holds finite values there (plan.StaleFinite): finite values only, the
// largest the type holds and others as large, which a cache of earlier
// rows may hold: ±max, ±max/2 (fp8e4m3: ±448, ±240, the largest value of
// e4m3's fnuz variant, and ±224). Every finite pattern of the first list
// is in the second: the declaration takes the NaN and Inf out, nothing
// else.
func staleBits(t *kvtype.Type, rows plan.StaleRows) []uint32 {
	if rows == plan.StaleFinite {
		switch t {
		case kvtype.F16:
			return []uint32{0x7BFF, 0xFBFF, 0x77FF, 0xF7FF}
		case kvtype.BF16:
			return []uint32{0x7F7F, 0xFF7F, 0x7EFF, 0xFEFF}
		case kvtype.FP8E4M3:
			return []uint32{0x7E, 0xFE, 0x77, 0xF7, 0x76, 0xF6}
		}
		return []uint32{0x7F7FFFFF, 0xFF7FFFFF, 0x7EFFFFFF, 0xFEFFFFFF}
	}
	switch t {
	case kvtype.F16:
		return []uint32{0x7E00, 0x7C00, 0xFC00, 0x7BFF, 0xFBFF}
	case kvtype.BF16:
		return []uint32{0x7FC0, 0x7F80, 0xFF80, 0x7F7F, 0xFF7F}
	case kvtype.FP8E4M3:
		return []uint32{0x7F, 0xFF, 0x7E, 0xFE}
	}
	return []uint32{0x7FC00000, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF}
}

// staleRowsPast is how many rows past a length of n the stale gate
// overwrites: staleRows or two chunks, up to the capacity.
func staleRowsPast(l layout, s abi.Shape, n int) int {
	chunk := (n + l.splits - 1) / l.splits
	return min(s.Capacity-n, max(staleRows, 2*chunk))
}

// staleSpans are the byte ranges of K or V (by its placement in a
// contiguous layout) past each sequence's length that the stale gate
// overwrites, and the bytes of the unit the patterns cycle by: one range
// per sequence in [batch][capacity][kv_heads][dim] (a unit is a row),
// one per (sequence, KV head) in [batch][kv_heads][capacity][dim] (a
// unit is one head's row).
func staleSpans(l layout, pl *abi.Placement, lengths []int) (spans []span, unit int64) {
	s := pl.Shape
	head := int64(pl.Width) * int64(pl.Elt)
	unit = int64(s.KVHeads) * head
	if pl.Layout == abi.BHSD {
		unit = head
	}
	for b, n := range lengths {
		rows := int64(staleRowsPast(l, s, n))
		if rows <= 0 {
			continue
		}
		if pl.Layout == abi.BHSD {
			for h := range s.KVHeads {
				spans = append(spans, span{dst: pl.Offset(b, n, h, 0) * int64(pl.Elt), n: rows * head})
			}
			continue
		}
		spans = append(spans, span{dst: pl.Offset(b, n, 0, 0) * int64(pl.Elt), n: rows * unit})
	}
	return spans, unit
}

// patternRows are one unit of each stale pattern of the KV type, under
// the spec's declaration about the rows past each length (staleBits).
func patternRows(t *kvtype.Type, unit int64, declared plan.StaleRows) [][]byte {
	var rows [][]byte
	for _, bits := range staleBits(t, declared) {
		row := make([]byte, unit)
		for e := range int(unit) / t.Bytes {
			t.PutBits(row, e, bits)
		}
		rows = append(rows, row)
	}
	return rows
}

// staleLaunch runs the point's kernel at nkv over uniform inputs whose
// rows past each length are stale, for the stale gate (gate.Session.
// StaleLaunch); K and V are put back afterwards.
func (r *session) staleLaunch(nkv int, lengths []int) (outputs, error) {
	c := &r.p.Config
	t := c.Shape.KVType()
	kp, vp := r.ws.placements(c.Shape)
	// undo puts K and V back as they were, on every path. Best effort on
	// the error paths: the record keeps the stale bytes where they were
	// not put back, so the next check finds any left behind.
	var undo func()
	defer func() {
		if undo != nil {
			undo()
		}
	}()
	if r.ws.paged() != nil {
		// A paged cache: the stale rows go in page by page, the same
		// patterns in K and V (pages.go).
		var ranges []rowRange
		for b, n := range lengths {
			ranges = append(ranges, rowRange{b, n, n + staleRowsPast(r.l, c.Shape, n)})
		}
		rows := patternRows(t, int64(c.Shape.KVHeads)*int64(kp.Width)*int64(t.Bytes), r.p.Stale.Rows)
		src := rowSource{row: func(b, rr int) ([]byte, []byte) {
			row := rows[(rr-lengths[b])%len(rows)]
			return row, row
		}}
		// A whole page past a length holds the patterns from the phase
		// of its first row: one image per phase, shared by every such
		// page of every sequence.
		phase := func(b, first int) ([2]int, bool) {
			return [2]int{-1, (first - lengths[b]) % len(rows)}, first >= lengths[b]
		}
		cps := r.ws.pagedCopies(c.Shape, ranges, src, phase, nil, r.ws.mirrorOf)
		var err error
		if undo, err = r.stalePagesOnDevice(cps); err != nil {
			return outputs{}, fmt.Errorf("writing stale rows past the lengths: %w", err)
		}
		if undo == nil {
			undo, err = r.writeStalePages(cps)
			if err != nil {
				return outputs{}, fmt.Errorf("writing stale rows past the lengths: %w", err)
			}
		}
	} else {
		// What each span held, as pieces of bytes the record keeps
		// already (inputpieces.go), written back afterwards.
		var restore []savedPieces
		undo = func() { restorePieces(r, restore) }
		bufs := []struct {
			p  cuda.DevPtr
			pl *abi.Placement
		}{{r.ws.k, kp}, {r.ws.v, vp}}
		if c.Shape.Attention.Latent() {
			bufs = bufs[:1] // V is K's first dv channels
		}
		for _, x := range bufs {
			p := x.p
			spans, rowBytes := staleSpans(r.l, x.pl, lengths)
			rows := patternRows(t, rowBytes, r.p.Stale.Rows)
			buf := r.ws.input(p)
			// Every span starts at the first pattern: one buffer as long
			// as the longest, each span a prefix of it (never changed, so
			// the record may keep it).
			var longest int64
			for _, sp := range spans {
				longest = max(longest, sp.n)
			}
			pat := make([]byte, longest)
			for r := int64(0); r*rowBytes < longest; r++ {
				copy(pat[r*rowBytes:min(longest, (r+1)*rowBytes)], rows[r%int64(len(rows))])
			}
			for _, sp := range spans {
				restore = append(restore, savedPieces{buf, buf.pieces(sp.dst, sp.n)})
				if err := r.writeInput(p, sp.dst, pat[:sp.n]); err != nil {
					return outputs{}, fmt.Errorf("writing stale rows past the lengths: %w", err)
				}
			}
		}
	}
	return r.runOutputs(r.k, c, r.geometryAt(r.g, nkv), lengths, firstSet)
}

// savedPieces are what a range of a read-only buffer held before the
// stale gate wrote over it, as pieces of bytes its record keeps.
type savedPieces struct {
	buf    *inputCopy
	pieces []inputWrite
}

// restorePieces writes saved back, best effort.
func restorePieces(r *session, saved []savedPieces) {
	for _, s := range saved {
		for _, pc := range s.pieces {
			_ = r.writeInput(s.buf.p, pc.off, pc.b)
		}
	}
}

// writeStalePages writes the stale pages cps (pagedCopies) into K and V
// one device write a page, and returns what writes back what they held.
// It is the stale gate's way where stalePagesOnDevice has no room.
func (r *session) writeStalePages(cps []kvCopy) (func(), error) {
	var restore []savedPieces
	undo := func() { restorePieces(r, restore) }
	for _, x := range r.ws.pageWrites(cps) {
		buf := r.ws.input(x.p)
		restore = append(restore, savedPieces{buf, buf.pieces(x.dst, int64(len(x.img)))})
		if err := r.writeInput(x.p, x.dst, x.img); err != nil {
			return undo, err
		}
	}
	return undo, nil
}

// A pageWrite is one page image of a kvCopy and where it goes.
type pageWrite struct {
	p   cuda.DevPtr // K's buffer or V's
	dst int64
	img []byte
}

// pageWrites are the writes of cps, K's and V's, without a missing V.
func (w *workspace) pageWrites(cps []kvCopy) []pageWrite {
	var out []pageWrite
	for _, cp := range cps {
		out = append(out, pageWrite{w.k, cp.dst, cp.k})
		if len(cp.v) > 0 {
			out = append(out, pageWrite{w.v, cp.vdst, cp.v})
		}
	}
	return out
}

// stalePagesOnDevice writes the stale pages cps (whole pages of K and V,
// pagedCopies) on the device. One synchronous write a page and one a
// page to put it back was most of a paged kernel's gate time at batch 16
// in 16-row pages (thousands of pages past the lengths at every gate
// length): here the pages the copies cover are first saved by device
// copies into scratch memory, the few distinct images (one per phase of
// the patterns, shared by every whole page past a length, and one per
// sequence for the page its length ends in) are uploaded there once, and
// ktune_copies copies them out. The function it returns copies the saved
// pages back, puts the record back as it was and frees the scratch.
//
// nil, nil: the way does not apply (a copy not one whole page of its
// record, or the scratch, which is the pages under the stale rows and
// their images, more than half the device memory left past the
// headroom, or more than the device can allocate) and the caller writes
// the pages itself.
func (r *session) stalePagesOnDevice(cps []kvCopy) (func(), error) {
	type slot struct {
		pageWrite
		rec *inputCopy
	}
	var slots []slot
	for _, x := range r.ws.pageWrites(cps) {
		rec := r.ws.input(x.p)
		if rec == nil || rec.page != int64(len(x.img)) || x.dst%rec.page != 0 {
			return nil, nil
		}
		slots = append(slots, slot{x, rec})
	}
	if len(slots) == 0 {
		return nil, nil
	}
	// The distinct images, by their first byte: pagedCopies shares one
	// slice among the pages of the same bytes. Scratch holds them, then
	// one saved page per slot.
	at := map[*byte]int64{}
	var imgs []bufCopy
	var n int64
	for _, s := range slots {
		if _, ok := at[&s.img[0]]; !ok {
			at[&s.img[0]] = n
			imgs = append(imgs, bufCopy{n, s.img})
			n += int64(len(s.img))
		}
	}
	saveAt := n
	for _, s := range slots {
		n += int64(len(s.img))
	}
	d := r.b.gpu
	free, err := d.memFree()
	if err != nil {
		return nil, fmt.Errorf("reading free device memory: %w", err)
	}
	if n > (free-headroom)/2 {
		return nil, nil
	}
	scratch, err := d.alloc(n)
	if cuda.IsOutOfMemory(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("allocating %s for the stale pages: %w", gib(n), err)
	}
	release := func() {
		// The copies from and to scratch are on the stream.
		_ = d.sync()
		_ = d.free(scratch)
	}
	// One after another, so that they go in as few writes as the stage
	// allows (writeInputs).
	if err := r.writeInputs(scratch, imgs); err != nil {
		release()
		return nil, fmt.Errorf("uploading the stale page images: %w", err)
	}
	save := make([]devCopy, len(slots))
	stale := make([]devCopy, len(slots))
	back := make([]devCopy, len(slots))
	before := make([][]byte, len(slots))
	off := saveAt
	for i, s := range slots {
		m := int64(len(s.img))
		page, kept := scratch+devOff(off), s.p+devOff(s.dst)
		save[i] = devCopy{page, kept, m}
		stale[i] = devCopy{kept, scratch + devOff(at[&s.img[0]]), m}
		back[i] = devCopy{kept, page, m}
		before[i] = s.rec.pageSlot(s.dst)
		off += m
	}
	if err := d.copyList(save); err != nil {
		release()
		return nil, fmt.Errorf("saving the pages under the stale rows: %w", err)
	}
	undo := func() {
		if d.copyList(back) == nil {
			for i, s := range slots {
				s.rec.setPage(s.dst, before[i])
			}
		}
		release()
	}
	// The record takes the stale pages before the copy, so that a copy
	// that failed part way is found by the next check.
	for _, s := range slots {
		s.rec.wrote(s.dst, s.img)
	}
	if err := d.copyList(stale); err != nil {
		return undo, err
	}
	return undo, nil
}
