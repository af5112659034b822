package probe

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/results"
)

// execute runs one launch: a memo of the previous one, or compute.
func (f *fakeDevice) execute(fk *fakeKernel, l fakeLaunch) {
	m, w := fk.m, l.w
	if m.memoAfter > 0 {
		if slices.Equal(fk.memoPos, l.pos) {
			fk.streak++
		} else {
			fk.memoPos, fk.streak = slices.Clone(l.pos), 1
		}
		pb, ob := f.at(w.partial)[:w.l.Partial], f.at(w.out)[:w.l.Out]
		if fk.streak > m.memoAfter {
			if !m.memoSkip {
				copy(pb, fk.memoPart)
				copy(ob, fk.memoOut)
			}
			return
		}
		defer func() { fk.memoPart, fk.memoOut = slices.Clone(pb), slices.Clone(ob) }()
	}
	f.compute(fk, l)
	if m.breakAfter > 0 && fk.launches > m.breakAfter {
		s := l.c.Shape
		ob := f.at(w.out)
		for i := range s.Batch * s.Heads * s.HeadDim {
			v := math.Float32frombits(binary.LittleEndian.Uint32(ob[4*i:]))
			binary.LittleEndian.PutUint32(ob[4*i:], math.Float32bits(v+0.5))
		}
	}
}

// compute computes the partial slots and out of one launch in float64.
func (f *fakeDevice) compute(fk *fakeKernel, l fakeLaunch) {
	m, c, w := fk.m, l.c, l.w
	if m.options != nil {
		f.computeOptions(fk, *m.options, l)
		return
	}
	s := c.Shape
	d, splits, pstr := s.HeadDim, c.Splits, abi.PartialStride(s.HeadDim)
	group := s.Heads / s.KVHeads
	q := f.at(w.q)
	kb, vb, pb, ob := f.at(w.k), f.at(w.v), f.at(w.partial), f.at(w.out)
	t := s.KVType()
	// A scaled type's element is decode(bits)·scale[K or V][kv head],
	// from the kv_scale buffer as uploaded.
	scaleOf := func(buf []byte, kh int) float64 {
		if !t.Scaled {
			return 1
		}
		sb := f.at(w.kvScale)
		if &buf[0] == &vb[0] {
			kh += s.KVHeads
		}
		if m.kScaleForV {
			kh %= s.KVHeads
		}
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(sb[4*kh:])))
	}
	kpl, vpl := kvPlacements(w, s)
	load := func(buf []byte, b, r, kh, i int) float64 {
		pl := kpl
		if &buf[0] == &vb[0] {
			pl = vpl
		}
		e := f.kvElem(m, w, pl, b, r, kh, i)
		bits := t.Bits(buf, e)
		if m.ftz && t == kvtype.F16 && bits&0x7c00 == 0 {
			return 0
		}
		return t.Decode(bits) * scaleOf(buf, kh)
	}
	put := func(buf []byte, i int, v float64) {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(v)))
	}
	get := func(buf []byte, i int) float64 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
	}
	scale := 1 / math.Sqrt(float64(d))
	for b := range s.Batch {
		n := int(l.pos[b]) + 1
		if m.nkvFromPages {
			n = f.pagedLength(w, b)
		}
		if m.nkvFromPlanned != "" {
			n = f.plannedLength(w, m.nkvFromPlanned, b)
		}
		if m.keepMax {
			if fk.seen == nil {
				fk.seen = map[int]int{}
			}
			fk.seen[b] = max(fk.seen[b], n)
			n = fk.seen[b]
		}
		chunk, rest := fakeChunk(m, c, b, n)
		for h := range s.Heads {
			kh := h / group
			for sp := range splits {
				slot := ((b*splits+sp)*s.Heads + h) * pstr
				lo, hi := sp*chunk, min(n, (sp+1)*chunk)
				if rest && sp == splits-1 {
					hi = max(lo, n) // the last split takes the rest
				}
				if m.readPast && hi < n {
					hi++
				}
				if m.pastLength > 0 && hi == n && hi > lo {
					hi = min(s.Capacity, n+m.pastLength)
				}
				if lo >= n && m.skipIdle {
					continue
				}
				mx, sum := math.Inf(-1), 0.0
				acc := make([]float64, d)
				for r := lo; r < hi; r++ {
					if m.gridRows > 0 && r >= l.g.grid[0]*m.gridRows {
						break
					}
					if m.skipNewest > 0 && n > m.skipNewest && r == n-1 {
						continue
					}
					dot := 0.0
					for i := range d {
						dot += get(q, (b*s.Heads+h)*d+i) * load(kb, b, r, kh, i)
					}
					sc := dot * scale
					nmx := math.Max(mx, sc)
					corr, e := math.Exp(mx-nmx), math.Exp(sc-nmx)
					sum = sum*corr + e
					for i := range d {
						acc[i] = acc[i]*corr + e*load(vb, b, r, kh, i)
					}
					mx = nmx
				}
				if m.prefetchPast && hi > lo {
					_ = load(kb, b, hi, kh, d-1)
				}
				if m.zeroTail > 0 && hi > lo {
					// A tile's masked rows, loaded and weighted by zero.
					for r := hi; r < min(s.Capacity, (hi+m.zeroTail-1)/m.zeroTail*m.zeroTail); r++ {
						for i := range d {
							acc[i] += 0 * load(vb, b, r, kh, i)
						}
					}
				}
				put(pb, slot, mx)
				put(pb, slot+1, sum)
				put(pb, slot+2, 0)
				put(pb, slot+3, 0)
				for i := range d {
					put(pb, slot+4+i, acc[i])
				}
			}
			if m.counters {
				// The fused merge: the split that brings the count to
				// SPLITS merges, which it can only see from zero.
				cb := f.at(w.scratch)[4*(b*s.KVHeads+kh):]
				start := binary.LittleEndian.Uint32(cb)
				if h%group == group-1 {
					end := start + uint32(splits)
					if !m.noRearm {
						end = 0
					}
					binary.LittleEndian.PutUint32(cb, end)
				}
				if start != 0 {
					continue // no split saw the count reach SPLITS: out stays as it was
				}
			}
			// The combine, from the slots as written (kernels/ABI.md).
			gmx := math.Inf(-1)
			for sp := range splits {
				gmx = math.Max(gmx, get(pb, ((b*splits+sp)*s.Heads+h)*pstr))
			}
			var S float64
			acc := make([]float64, d)
			for sp := range splits {
				slot := ((b*splits+sp)*s.Heads + h) * pstr
				wt := math.Exp(get(pb, slot) - gmx)
				S += get(pb, slot+1) * wt
				for i := range d {
					acc[i] += get(pb, slot+4+i) * wt
				}
			}
			for i := range d {
				v := 0.0
				if S > 0 {
					v = acc[i] / S
				}
				if m.driftPast > 0 && n > m.driftPast {
					v += 0.01
				}
				put(ob, (b*s.Heads+h)*d+i, v+float64(m.offset))
			}
		}
	}
	f.memoryDefects(m, l)
	if w := m.corruptWindow; (m.corruptEvery > 0 && fk.launches%m.corruptEvery == 0) || (fk.launches >= w[0] && fk.launches < w[1]) {
		binary.LittleEndian.PutUint32(ob, math.Float32bits(math.Float32frombits(binary.LittleEndian.Uint32(ob))+0.25))
	}
	if m.noise && fk.launches%2 == 0 {
		binary.LittleEndian.PutUint32(ob, binary.LittleEndian.Uint32(ob)^1)
	}
}

// kvElem is the element of K (v false) or V that a kernel reads for
// element i of row r of KV head kh of sequence b: through the block table
// as the device holds it when the layout is paged (the identity page when
// the model ignores the table), in the layout's order otherwise.
func (f *fakeDevice) kvElem(m fakeModel, w *workspace, pl *abi.Placement, b, r, kh, i int) int {
	if pl.Layout != abi.Paged {
		return int(pl.Offset(b, r, kh, i))
	}
	P, maxPages := w.l.pageSize, abi.MaxPages(pl.Shape, w.l.pageSize)
	pg := b*maxPages + r/P
	if !m.ignoreTable {
		pg = int(int32(binary.LittleEndian.Uint32(f.at(w.pages)[4*(b*maxPages+r/P):])))
	}
	return pg*int(pl.PageElems()) + int(pl.InPage(r%P, kh, i))
}

// kvPlacements are K's and V's placements in w for shape s, made once per
// launch rather than once per element read (most of the fake's time).
// A paged one carries the pool's page size, as kvElem reads it.
func kvPlacements(w *workspace, s abi.Shape) (k, v *abi.Placement) {
	io := w.l.io()
	k, v = io.Placement(s, false, nil), io.Placement(s, true, nil)
	for _, pl := range []*abi.Placement{k, v} {
		if pl.Layout == abi.Paged {
			pl.Pool = &abi.Pool{PageSize: w.l.pageSize}
		}
	}
	return k, v
}

// pagedLength is sequence b's length as a FlashInfer-style kernel reads it
// from the device: its used pages (page_indptr) and the rows of the last
// (last_page_len).
func (f *fakeDevice) pagedLength(w *workspace, b int) int {
	d := w.l.dims(abi.Shape{Batch: w.l.poolBatch, Capacity: w.l.poolCapacity})
	word := func(buf string, i int) int {
		at := abi.BufferNamed(buf).At(d) + 4*int64(i)
		return int(int32(binary.LittleEndian.Uint32(f.at(w.pages)[at:])))
	}
	used := word("page_indptr", b+1) - word("page_indptr", b)
	return (used-1)*w.l.pageSize + word("last_page_len", b)
}

// memoryDefects applies a model's writes outside its outputs, after the
// launch computed them.
func (f *fakeDevice) memoryDefects(m fakeModel, l fakeLaunch) {
	s, w := l.c.Shape, l.w
	switch m.writeInput {
	case "k":
		// An in-place dequantisation that stores back what it decoded,
		// halved: the first element of each sequence's newest row.
		t := s.KVType()
		kb := f.at(w.k)
		for b := range s.Batch {
			e := (b*s.Capacity + int(l.pos[b])) * s.KVHeads * s.HeadDim
			t.PutBits(kb, e, t.Encode(t.Decode(t.Bits(kb, e))/2+1))
		}
	case "positions":
		// Marks each sequence done by clearing its seqlens entry.
		clear(f.at(w.positions)[4*s.Batch : 8*s.Batch])
	}
	if m.writePastOut {
		binary.LittleEndian.PutUint32(f.at(w.out)[4*s.Batch*s.Heads*s.HeadDim:], 0)
	}
	if m.writeBefore {
		binary.LittleEndian.PutUint32(f.at(w.partial-4), 0)
	}
}

// fakeChunk is the rows per split of sequence b (length n) of a launch:
// the SPLITSIZE define's fixed size, the last split taking any rest
// (rest), or nkv over the split count in use, which a defect model makes
// follow the batch or the position.
func fakeChunk(m fakeModel, c results.Config, b, n int) (chunk int, rest bool) {
	for _, d := range c.Defines {
		if d.Name == "SPLITSIZE" {
			if v, err := strconv.Atoi(d.Value); err == nil && v > 0 {
				return v, true
			}
		}
	}
	e := c.Splits
	if m.splitsByBatch {
		e = max(1, c.Splits/c.Shape.Batch)
	}
	if m.splitsByPos {
		e = max(1, c.Splits-b%2)
	}
	return (n + e - 1) / e, false
}
