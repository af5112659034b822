package probe

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
)

// Paged K/V (abi/paged.go): the workspace's K and V are a pool of pages,
// each sequence's logical rows in the pages its block table names, in the
// pool's shuffled order, with spare pages of NaN among them. The oracle
// keeps reading logical rows; this file is where they meet the pages.
// Every write of rows to a paged K or V is a write of whole pages, so that
// a page is one copy however its order scatters a row.

// poolOf is the page assignment of a paged layout at its shape, nil for a
// contiguous one. The layout carries the batch and capacity the pool was
// made for, so that a workspace is reused only by points with its pool.
func (l layout) poolOf() (*abi.Pool, error) {
	if l.kvLayout != abi.Paged {
		return nil, nil
	}
	return abi.NewPool(abi.Shape{Batch: l.poolBatch, Capacity: l.poolCapacity}, l.pageSize, l.paging.Pages)
}

// paged returns the workspace's page assignment, nil when K and V are
// contiguous. sized has made the layout's pool once already, so it cannot
// fail here.
func (w *workspace) paged() *abi.Pool {
	if w.pool == nil && w.l.kvLayout == abi.Paged {
		p, err := w.l.poolOf()
		if err != nil {
			panic(fmt.Sprintf("probe: the pool of a sized layout: %v", err))
		}
		w.pool = p
	}
	return w.pool
}

// nanWord is a 32-bit word of quiet NaNs of the KV type: what the spare
// pages hold (fp8e4m3's NaN code, f16's and bf16's in both halves).
func nanWord(t *kvtype.Type) uint32 {
	switch t.Bytes {
	case 1:
		return 0x7F7F7F7F
	case 2:
		if t == kvtype.BF16 {
			return 0x7FC07FC0
		}
		return 0x7E007E00
	}
	return 0x7FC00000
}

// spareFills are the fills of the pool's spare pages in K and V: NaN, so
// that a kernel that reads a page no sequence owns (a table entry past the
// used ones, an index off by one) computes NaN. They follow the random
// fill, and the record of what K and V hold has them (initInputs).
func (w *workspace) spareFills() []wordFill {
	pool := w.paged()
	if pool == nil {
		return nil
	}
	pb := w.l.pageB
	var out []wordFill
	for _, buf := range []struct {
		name string
		p    cuda.DevPtr
	}{{"k", w.k}, {"v", w.v}} {
		for _, pg := range pool.Spare() {
			out = append(out, wordFill{buf.name + " spare page", buf.p + devOff(int64(pg)*pb), pb, nanWord(w.l.kv)})
		}
	}
	return out
}

// placements are K's and V's placements in the workspace at s.
func (w *workspace) placements(s abi.Shape) (k, v *abi.Placement) {
	io := w.l.io()
	return io.Placement(s, false, w.paged()), io.Placement(s, true, w.paged())
}

// A rowRange is logical rows [lo, hi) of sequence b.
type rowRange struct{ b, lo, hi int }

// A rowSource gives logical row r of sequence b: K's and V's bytes of the
// row, [kv_heads][width] each; block, when not nil, gives rows [lo, hi)
// of sequence b as one run of bytes each where they lie one after another
// in the source (ok false where they do not), so that a token-major page
// of them is those bytes as they are, not a copy built row by row.
type rowSource struct {
	row   func(b, r int) (k, v []byte)
	block func(b, lo, hi int) (k, v []byte, ok bool)
}

// packedRows is the rowSource of the oracle's packed rows, [batch][rows]
// [kv_heads][width], row r of a sequence taken from row r mod rows: rows
// past the set repeat it, as the long gates tile it (tile.go). A block
// lies in one run unless it wraps past the set's rows or holds a patched
// row of K (a needle of the peaked set, Inputs.KPatches).
func packedRows(s abi.Shape, elt int, p packed) rowSource {
	rb := s.KVHeads * s.HeadDim * elt
	patched := map[[2]int][]byte{}
	for _, pt := range p.kPatch {
		patched[[2]int{pt.B, pt.R}] = pt.Bytes
	}
	return rowSource{
		row: func(b, r int) ([]byte, []byte) {
			k, v := (b*p.kStride+r%p.rows)*rb, (b*p.vStride+r%p.rows)*rb
			if pk := patched[[2]int{b, r % p.rows}]; pk != nil {
				return pk, p.v[v : v+rb]
			}
			return p.k[k : k+rb], p.v[v : v+rb]
		},
		block: func(b, lo, hi int) ([]byte, []byte, bool) {
			if lo/p.rows != (hi-1)/p.rows {
				return nil, nil, false // wraps past the set's rows
			}
			r0 := lo % p.rows
			for r := r0; len(patched) > 0 && r < r0+hi-lo; r++ {
				if _, ok := patched[[2]int{b, r}]; ok {
					return nil, nil, false
				}
			}
			k, v := (b*p.kStride+r0)*rb, (b*p.vStride+r0)*rb
			return p.k[k : k+(hi-lo)*rb], p.v[v : v+(hi-lo)*rb], true
		},
	}
}

// pagedCopies are the page writes that put the ranges' rows of src in
// place: one copy of K and V per page a range touches. A page the ranges
// cover only in part starts from what the record says it holds (mirror),
// so that the rest of it is written back unchanged. same, when not nil,
// names the whole pages that hold the same bytes (ok false: a page like
// no other): such a page is built once and the copies share its bytes (a
// cache tiled to its capacity would otherwise hold a second copy of
// itself on the host, and the stale rows one page image per page).
func (w *workspace) pagedCopies(s abi.Shape, ranges []rowRange, src rowSource, same pageKey, imgs *imageSource,
	mirror func(k bool, off, n int64) []byte) []kvCopy {
	kp, vp := w.placements(s)
	pool := w.paged()
	P, elt := pool.PageSize, w.l.elt
	pb := w.l.pageB
	built := map[[2]int]kvCopy{}
	var out []kvCopy
	for _, rg := range ranges {
		for j := rg.lo / P; j*P < rg.hi; j++ {
			lo, hi := max(rg.lo, j*P), min(rg.hi, (j+1)*P)
			dst := int64(pool.Page(rg.b, j)) * pb
			whole := lo == j*P && hi == (j+1)*P
			var k [2]int
			shared := false
			if whole && same != nil {
				k, shared = same(rg.b, j*P)
			}
			if c, ok := built[k]; ok && shared {
				out = append(out, kvCopy{dst: dst, k: c.k, v: c.v, vdst: dst})
				continue
			}
			var kimg, vimg []byte
			buildK, buildV := true, true
			if whole {
				// An image an earlier upload built from the same rows;
				// else, token-major, the rows themselves where they lie
				// in one run (nothing writes into an image: the record
				// keeps it, inputCopy.wrote, and a later partial write
				// starts from a copy, bytesAt); else a new one.
				kimg, vimg = w.image(imgs, true, rg.b, j), w.image(imgs, false, rg.b, j)
				if src.block != nil && (kimg == nil || vimg == nil) {
					if kb, vb, ok := src.block(rg.b, lo, hi); ok {
						if kimg == nil && kp.Order == abi.PageNHD && int64(len(kb)) == pb {
							kimg = kb
						}
						if vimg == nil && vp.Order == abi.PageNHD && int64(len(vb)) == pb {
							vimg = vb
						}
					}
				}
				buildK, buildV = kimg == nil, vimg == nil
				if buildK {
					kimg = make([]byte, pb)
				}
				if buildV {
					vimg = make([]byte, pb)
				}
			} else {
				kimg, vimg = mirror(true, dst, pb), mirror(false, dst, pb)
			}
			for r := lo; r < hi && (buildK || buildV); r++ {
				kr, vr := src.row(rg.b, r)
				if buildK {
					scatterRow(kimg, kp, r-j*P, kr, elt)
				}
				if buildV {
					scatterRow(vimg, vp, r-j*P, vr, elt)
				}
			}
			if whole {
				if buildK {
					w.keepImage(imgs, true, rg.b, j, kimg)
				}
				if buildV {
					w.keepImage(imgs, false, rg.b, j, vimg)
				}
			}
			c := kvCopy{dst: dst, k: kimg, v: vimg, vdst: dst}
			if shared {
				built[k] = c
			}
			out = append(out, c)
		}
	}
	return out
}

// A pageKey names the bytes of the whole page of sequence b whose first
// row is first: pages of one key hold the same bytes.
type pageKey func(b, first int) (key [2]int, ok bool)

// tiledPages is the pageKey of rows that repeat every tile rows: a page
// is like the one a multiple of tile rows before it in its sequence,
// unless it spans the cycle's end.
func tiledPages(tile, pageRows int) pageKey {
	return func(b, first int) ([2]int, bool) {
		return [2]int{b, first % tile}, first%tile+pageRows <= tile
	}
}

// scatterRow writes one logical row ([kv_heads][width], elt bytes each) at
// row rp of a page image, in runs of the placement's contiguous elements.
func scatterRow(img []byte, pl *abi.Placement, rp int, row []byte, elt int) {
	run, w := pl.Run(), pl.Width
	for h := range pl.Shape.KVHeads {
		for e := 0; e < w; e += run {
			at := pl.InPage(rp, h, e) * int64(elt)
			from := (h*w + e) * elt
			copy(img[at:at+int64(run*elt)], row[from:from+run*elt])
		}
	}
}

// mirrorOf reads what the record of K or V says bytes [off, off+n) hold.
func (w *workspace) mirrorOf(k bool, off, n int64) []byte {
	p := w.v
	if k {
		p = w.k
	}
	return w.input(p).bytesAt(off, n)
}

// lengthInputs are the length-derived inputs besides the positions, for
// the lengths: a paged layout's index buffers, the mask, the split
// counts, the host-planned arrays. Each goes in one copy of its
// allocation.
func (r *session) lengthInputs(lengths []int) ([]inputWrite, []cuda.DevPtr, error) {
	w, s := r.ws, r.p.Config.Shape
	d := w.l.dims(s)
	var writes []inputWrite
	var at []cuda.DevPtr
	if pool := w.paged(); pool != nil {
		b, err := pool.IndexBytes(d, lengths)
		if err != nil {
			return nil, nil, fmt.Errorf("the page index buffers: %w", err)
		}
		writes, at = append(writes, inputWrite{0, b}), append(at, w.pages)
	}
	if w.l.Mask > 0 {
		b, err := abi.MaskBytes(d, lengths)
		if err != nil {
			return nil, nil, fmt.Errorf("the mask: %w", err)
		}
		writes, at = append(writes, inputWrite{0, b}), append(at, w.mask)
	}
	if w.l.SplitCounts > 0 {
		b, err := abi.SplitCountBytes(d, r.p.Config.Defines, lengths)
		if err != nil {
			return nil, nil, fmt.Errorf("the split counts: %w", err)
		}
		writes, at = append(writes, inputWrite{0, b}), append(at, w.splitCounts)
	}
	if w.l.Planned > 0 {
		b, err := abi.PlannedBytes(d, r.p.Planned, d.Env(r.p.Config.Defines), lengths)
		if err != nil {
			return nil, nil, fmt.Errorf("the planned arrays: %w", err)
		}
		writes, at = append(writes, inputWrite{0, b}), append(at, w.planned)
	}
	return writes, at, nil
}

// pageElementName says which index buffer element e of the pages
// allocation is, for messages.
func pageElementName(d abi.Dims, e int64) string {
	for i := len(abi.Buffers) - 1; i >= 0; i-- {
		b := &abi.Buffers[i]
		if b.Alloc == abi.AllocPages && e*4 >= b.At(d) {
			return fmt.Sprintf("%s[%d]", b.Name, (e*4-b.At(d))/4)
		}
	}
	return fmt.Sprintf("word %d", e)
}
