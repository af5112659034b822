package probe

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/oracle"
)

// The uniform set tiled to the capacity, for the gates that judge lengths
// past the rows drawn (gate.Session.UploadTiled; package gate's long.go
// says why): row r of every sequence holds row r mod Rows
// (oracle.Inputs.Tiled).

// uploadTiled writes the rows of in (uploaded at the start of every
// sequence) again and again up to the capacity, unless the workspace
// holds them already.
func (r *session) uploadTiled(in *oracle.Inputs) error {
	w, s := r.ws, r.p.Config.Shape
	if w.tiled == (uploaded{keyOf(r.p), in.Rows}) {
		return nil
	}
	w.tiled = uploaded{}
	if pool := w.paged(); pool != nil {
		if err := r.tilePages(in, pool); err != nil {
			return err
		}
		w.tiled = uploaded{keyOf(r.p), in.Rows}
		return nil
	}
	// Contiguous: each sequence's (and, head-major, each head's) rows are
	// on the device as uploadSet left them, so they are tiled there, each
	// copy doubling what the last one made, instead of crossing the bus
	// again (4 GiB a buffer at batch 16).
	ks, vs := splitKV(w.kvCopies(s, packedOf(in)))
	for _, x := range []struct {
		p  cuda.DevPtr
		cs []bufCopy
	}{{w.k, ks}, {w.v, vs}} {
		for _, c := range x.cs {
			if err := r.tileOnDevice(x.p, c, int64(in.Rows), int64(s.Capacity)); err != nil {
				return fmt.Errorf("tiling K and V to the capacity: %w", err)
			}
		}
	}
	w.tiled = uploaded{keyOf(r.p), in.Rows}
	return nil
}

// tilePages tiles the set in a paged pool. Where the set is whole pages
// (longGates rounds it up to them), every page past it holds the bytes
// of one of the set's pages, which uploadSet left on the device: each is
// copied from there, all of them in one copyList (8 GiB at batch 16,
// which staged through pinned host memory was most of the gate's time),
// and the records take the set's page as it. The rest (a last page
// partly past the capacity, or a set not of whole pages) is built on the
// host, each page once per place in the cycle of in.Rows.
func (r *session) tilePages(in *oracle.Inputs, pool *abi.Pool) error {
	w, s := r.ws, r.p.Config.Shape
	P, pb := pool.PageSize, r.l.pageB
	whole := 0 // pages of each sequence copied on the device
	if in.Rows%P == 0 {
		whole = s.Capacity / P
	}
	set := in.Rows / P
	var cs []devCopy
	rk, rv := w.input(w.k), w.input(w.v)
	for b := range s.Batch {
		for j := set; j < whole; j++ {
			dst, src := int64(pool.Page(b, j))*pb, int64(pool.Page(b, j%set))*pb
			cs = append(cs, devCopy{w.k + devOff(dst), w.k + devOff(src), pb}, devCopy{w.v + devOff(dst), w.v + devOff(src), pb})
			for _, rec := range []*inputCopy{rk, rv} {
				if rec != nil {
					rec.wrote(dst, rec.pageAt(src, pb))
				}
			}
		}
	}
	if err := r.b.gpu.copyList(cs); err != nil {
		return fmt.Errorf("tiling K and V to the capacity: %w", err)
	}
	lo := max(in.Rows, whole*P)
	if lo >= s.Capacity {
		return nil
	}
	ranges := make([]rowRange, s.Batch)
	for b := range ranges {
		ranges[b] = rowRange{b, lo, s.Capacity}
	}
	src := packedRows(s, r.l.elt, packedOf(in))
	ks, vs := splitKV(w.pagedCopies(s, ranges, src, tiledPages(in.Rows, P), nil, w.mirrorOf))
	if err := r.writeInputs(w.k, ks); err != nil {
		return fmt.Errorf("tiling K to the capacity: %w", err)
	}
	if err := r.writeInputs(w.v, vs); err != nil {
		return fmt.Errorf("tiling V to the capacity: %w", err)
	}
	return nil
}

// tileOnDevice repeats the rows rows of c, which the buffer at p holds at
// c.dst, up to capacity rows: the record of the buffer takes every tile as
// a write of c's bytes, and the device copies them from the rows before,
// each copy at most as long as what is already in place. A copy of
// another length than rows rows (a patched row) has no tiles.
func (r *session) tileOnDevice(p cuda.DevPtr, c bufCopy, rows, capacity int64) error {
	unit := int64(len(c.b)) / rows // one row's bytes in this copy
	if unit == 0 || unit*rows != int64(len(c.b)) {
		return nil
	}
	if rec := r.ws.input(p); rec != nil {
		for k := int64(1); k*rows < capacity; k++ {
			n := min(rows, capacity-k*rows) * unit
			rec.wrote(c.dst+k*rows*unit, c.b[:n])
		}
	}
	for have := rows; have < capacity; {
		n := min(have, capacity-have)
		if err := r.b.gpu.copyAsync(p+devOff(c.dst+have*unit), p+devOff(c.dst), n*unit); err != nil {
			return err
		}
		have += n
	}
	return nil
}
