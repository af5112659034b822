package probe

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"

	"github.com/ktune/ktune/internal/cuda"
)

// Coalesced uploads.
//
// An upload of K or V is many pieces: a page each in a paged pool (a
// set's 1664 pages among 131072 at batch 16 in 16-row pages; the pages
// of the cache tiled to the capacity are copied on the device from the
// set's, tile.go), a tile of rows each in a contiguous cache tiled to
// the capacity. One device write per piece costs a synchronous
// copy and two stream waits each, which made the uploads most of a paged
// kernel's gate time on the H200 (5.8 of 9.3 s at 16-row pages). So
// writeInputs stages the pieces that touch or overlap into runs of at
// most stageMax bytes and writes each run once, from host memory the
// device holds pinned (device.stage), and the device's bytes come out as
// the pieces written one by one would leave them.

// stageMax is the most bytes one coalesced write stages; a run grows
// past it only where its pieces overlap.
const stageMax = 64 << 20

// A writeRun is a range [lo, hi) of a buffer covered by pieces that
// touch or overlap, members their indices in write order; overlap says
// some of them overlap (so their order matters).
type writeRun struct {
	lo, hi  int64
	members []int
	overlap bool
}

// coalesce groups cs into disjoint runs: pieces that touch join a run
// while it stays within limit bytes, pieces that overlap always join.
// Empty pieces are left out.
func coalesce(cs []bufCopy, limit int64) []writeRun {
	idx := make([]int, 0, len(cs))
	for i, c := range cs {
		if len(c.b) > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(cs[a].dst, cs[b].dst) })
	var runs []writeRun
	for _, i := range idx {
		lo, hi := cs[i].dst, cs[i].dst+int64(len(cs[i].b))
		if n := len(runs); n > 0 {
			r := &runs[n-1]
			if lo < r.hi || lo == r.hi && max(hi, r.hi)-r.lo <= limit {
				r.overlap = r.overlap || lo < r.hi
				r.hi = max(r.hi, hi)
				r.members = append(r.members, i)
				continue
			}
		}
		runs = append(runs, writeRun{lo: lo, hi: hi, members: []int{i}})
	}
	for i := range runs {
		if runs[i].overlap {
			slices.Sort(runs[i].members) // the order they were given in
		}
	}
	return runs
}

// fill writes run's pieces into dst (the run's bytes, dst[0] at run.lo):
// in the order given where they overlap, else on every core.
func (run writeRun) fill(dst []byte, cs []bufCopy) {
	put := func(i int) { copy(dst[cs[i].dst-run.lo:], cs[i].b) }
	workers := runtime.GOMAXPROCS(0)
	if run.overlap || workers == 1 || run.hi-run.lo < 4<<20 {
		for _, i := range run.members {
			put(i)
		}
		return
	}
	onCores(len(run.members), func(lo, hi int) {
		for _, i := range run.members[lo:hi] {
			put(i)
		}
	})
}

// Runs of at most scatterMax bytes, when an upload has at least
// scatterRuns of them, are packed into the pinned stage, uploaded to the
// device's stage in one write and copied to their places there, each an
// asynchronous device copy: a set's pages in a paged pool lie shuffled
// over the whole pool (1664 pages among 131072 at batch 16), so that no
// two touch and coalescing alone left a write per page.
const (
	scatterMax  = 1 << 20
	scatterRuns = 8
)

// writeInputs writes every piece of cs to the buffer at p (offsets from
// p) as writeInput would one by one: in one device write per run
// (coalesce), the small runs of a scattered upload through the device's
// stage. The record of a read-only buffer takes the pieces in order.
func (r *session) writeInputs(p cuda.DevPtr, cs []bufCopy) error {
	if c := r.ws.input(p); c != nil {
		for _, x := range cs {
			c.wrote(x.dst, x.b)
		}
	}
	runs := coalesce(cs, stageMax)
	var small []writeRun
	for _, run := range runs {
		if run.hi-run.lo <= scatterMax {
			small = append(small, run)
		}
	}
	scatter := len(small) >= scatterRuns
	for _, run := range runs {
		n := run.hi - run.lo
		if scatter && n <= scatterMax {
			continue // below
		}
		var b []byte
		switch {
		case len(run.members) == 1:
			b = cs[run.members[0]].b
		case n <= stageMax:
			var err error
			if b, err = r.b.gpu.stage(n); err != nil {
				return err
			}
			run.fill(b, cs)
		default:
			b = make([]byte, n) // overlapping pieces past stageMax: rare
			run.fill(b, cs)
		}
		if err := r.b.gpu.write(p+devOff(run.lo), b); err != nil {
			return err
		}
	}
	if scatter {
		return r.scatterRuns(p, small, cs)
	}
	return nil
}

// scatterRuns writes runs (each at most scatterMax bytes) of cs to the
// buffer at p: as many as fit in stageMax are packed into the pinned
// stage, written to the device's stage at once, and copied from there to
// their places on the stream. The next batch's write waits for the
// stream, so the device's stage is not overwritten before its copies ran.
func (r *session) scatterRuns(p cuda.DevPtr, runs []writeRun, cs []bufCopy) error {
	d := r.b.gpu
	dev, err := d.stageDevice()
	if err != nil {
		return err
	}
	for len(runs) > 0 {
		var used int64
		k := 0
		for k < len(runs) && used+(runs[k].hi-runs[k].lo) <= stageMax {
			used += runs[k].hi - runs[k].lo
			k++
		}
		host, err := d.stage(used)
		if err != nil {
			return err
		}
		var off int64
		for _, run := range runs[:k] {
			n := run.hi - run.lo
			run.fill(host[off:off+n], cs)
			off += n
		}
		if err := d.write(dev, host); err != nil {
			return err
		}
		off = 0
		for _, run := range runs[:k] {
			n := run.hi - run.lo
			if err := d.copyAsync(p+devOff(run.lo), dev+devOff(off), n); err != nil {
				return fmt.Errorf("copying %d bytes from the device's stage: %w", n, err)
			}
			off += n
		}
		runs = runs[k:]
	}
	return nil
}
