package probe

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// pagedPoint is fakePoint with K and V in a paged pool: pages of 16 rows
// (so the gate lengths 7, 9, 17, 29 and 100 end inside a page), in the
// given order and assignment.
func pagedPoint(variant string, order abi.PageOrder, pages abi.PageAssign) *plan.Point {
	p := fakePoint(variant, 100)
	p.IO = abi.ABIIO
	p.IO.KVLayout, p.IO.Paging = abi.Paged, abi.Paging{PageSize: "16", Order: order, Pages: pages}
	p.PageSize = 16
	return p
}

// TestPagedGates: a kernel that reads K and V through the block table
// passes every gate over shuffled pages in each page order; one that
// reads the pages in sequence order fails the numerics gates; a kernel
// that takes its lengths from page_indptr and last_page_len passes too,
// replay included, so the index buffers are rewritten at every length and
// between replays.
func TestPagedGates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		m     fakeModel
		order abi.PageOrder
		pages abi.PageAssign
		ok    bool
	}{
		{"nhd", fakeModel{}, abi.PageNHD, abi.PagesShuffled, true},
		{"hnd", fakeModel{}, abi.PageHND, abi.PagesShuffled, true},
		{"split_x", fakeModel{}, abi.PageSplitX, abi.PagesShuffled, true},
		{"lengths from the page indices", fakeModel{nkvFromPages: true}, abi.PageNHD, abi.PagesShuffled, true},
		{"table ignored", fakeModel{ignoreTable: true}, abi.PageNHD, abi.PagesShuffled, false},
		// With identity pages the same kernel is right: the shuffle is
		// what catches it.
		{"table ignored, identity pages", fakeModel{ignoreTable: true}, abi.PageNHD, abi.PagesIdentity, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models["k"] = c.m
			b := fakeBackend(t, f)
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec, err := b.Run(context.Background(), pagedPoint("k", c.order, c.pages))
			if err != nil {
				t.Fatal(err)
			}
			failed := failedKinds(rec.Gates)
			if c.ok && (rec.Status != results.StatusOK || len(failed) > 0) {
				t.Fatalf("status %s (%s), failed gates %v", rec.Status, rec.Error, failed)
			}
			if !c.ok && (rec.Status != results.StatusGateFailed || !slices.ContainsFunc(failed, func(k string) bool { return len(k) > 9 && k[:9] == "tolerance" })) {
				t.Fatalf("status %s, failed gates %v: want the tolerance gate to fail", rec.Status, failed)
			}
			if c.ok && c.order == abi.PageNHD {
				kinds := map[results.GateKind]bool{}
				for _, g := range rec.Gates {
					kinds[g.Kind] = true
				}
				for _, k := range []results.GateKind{results.GateTolerance, results.GateReplay, results.GateStale, results.GateReadOnly, results.GateBounds} {
					if !kinds[k] {
						t.Errorf("no %s gate ran on the paged point (gates %v)", k, kinds)
					}
				}
			}
		})
	}
}

// TestPagedPlacement: the oracle's rows land where the block table and
// the page order say, every spare page holds NaN, and the record of what
// K holds (which the read-only gate compares with) agrees with the
// device byte for byte.
func TestPagedPlacement(t *testing.T) {
	for _, order := range []abi.PageOrder{abi.PageNHD, abi.PageHND, abi.PageSplitX} {
		p := pagedPoint("k", order, abi.PagesShuffled)
		f := newFakeDevice()
		f.models["k"] = fakeModel{}
		bk := fakeBackend(t, f)
		if _, err := bk.Env(context.Background()); err != nil {
			t.Fatal(err)
		}
		l, err := pointLayout(p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := f.allocWorkspace(l)
		if err != nil {
			t.Fatal(err)
		}
		r := &pointRun{session: session{b: bk, p: p, l: l, ws: w}}
		s := p.Config.Shape
		const rows = 37 // two whole pages and a part
		// V's array holds more rows per sequence than the set (a set
		// sharing its base's V: oracle.Inputs.Strides).
		const vStride = rows + 3
		rb := s.KVHeads * s.HeadDim * 2
		kb, vb := make([]byte, s.Batch*rows*rb), make([]byte, s.Batch*vStride*rb)
		for i := range vb {
			if i < len(kb) {
				kb[i] = byte(i*7 + 1)
			}
			vb[i] = byte(i*13 + 5)
		}
		for _, cp := range w.kvCopies(s, packed{rows, rows, vStride, kb, vb, nil}) {
			if err := r.writeInput(w.k, cp.dst, cp.k); err != nil {
				t.Fatal(err)
			}
			if err := r.writeInput(w.v, cp.vdst, cp.v); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.setPositions([]int{rows, rows - 20}); err != nil {
			t.Fatal(err)
		}
		// Element e of row r of KV head h of sequence b, read through
		// the device's block table and the order's own formula.
		bt := f.at(w.pages)
		maxPages := abi.MaxPages(s, 16)
		P, D, H := 16, s.HeadDim, s.KVHeads
		at := func(v bool, b, row, h, e int) int {
			pg := int(binary.LittleEndian.Uint32(bt[4*(b*maxPages+row/P):]))
			rp := row % P
			in := (rp*H+h)*D + e
			switch {
			case order == abi.PageHND:
				in = (h*P+rp)*D + e
			case order == abi.PageSplitX && v:
				in = (h*D+e)*P + rp
			case order == abi.PageSplitX:
				in = ((h*(D/8)+e/8)*P+rp)*8 + e%8
			}
			return 2 * (pg*P*H*D + in)
		}
		dk, dv := f.at(w.k), f.at(w.v)
		for b := range s.Batch {
			for row := range rows {
				for h := range H {
					for e := range D {
						src := (b*rows+row)*rb + 2*(h*D+e)
						if i := at(false, b, row, h, e); !bytes.Equal(dk[i:i+2], kb[src:src+2]) {
							t.Fatalf("%s: K of sequence %d row %d head %d dim %d is %x, want %x", order, b, row, h, e, dk[i:i+2], kb[src:src+2])
						}
						vsrc := (b*vStride+row)*rb + 2*(h*D+e)
						if i := at(true, b, row, h, e); !bytes.Equal(dv[i:i+2], vb[vsrc:vsrc+2]) {
							t.Fatalf("%s: V of sequence %d row %d head %d dim %d is %x, want %x", order, b, row, h, e, dv[i:i+2], vb[vsrc:vsrc+2])
						}
					}
				}
			}
		}
		pb := int(l.pageB)
		for _, pg := range w.paged().Spare() {
			for i := int(pg) * pb; i < (int(pg)+1)*pb; i += 2 {
				if binary.LittleEndian.Uint16(dk[i:]) != 0x7E00 || binary.LittleEndian.Uint16(dv[i:]) != 0x7E00 {
					t.Fatalf("%s: spare page %d is not NaN at byte %d", order, pg, i-int(pg)*pb)
				}
			}
		}
		for _, c := range w.inputs {
			if !bytes.Equal(c.bytesAt(0, c.n), f.at(c.p)[:c.n]) {
				t.Errorf("%s: the record of %s differs from the device", order, c.name)
			}
		}
	}
}

// TestPagedRecord: the record of a paged buffer, kept a page at a time,
// says what a list of writes would: whole pages, a write across a page
// boundary and one inside a page, over the fill, with a tail shorter than
// a page.
func TestPagedRecord(t *testing.T) {
	fill := func(off int64, b []byte) {
		for i := range b {
			b[i] = byte(off+int64(i)) ^ 0x5a
		}
	}
	const n = 10*16 + 8
	paged := &inputCopy{n: n, fill: fill, page: 16, pages: make([][]byte, (n+15)/16)}
	plain := &inputCopy{n: n, fill: fill}
	for _, w := range []struct {
		off int64
		n   int
	}{{32, 32}, {40, 20}, {3, 5}, {150, 18}, {64, 16}, {0, 16}} {
		b := make([]byte, w.n)
		for i := range b {
			b[i] = byte(w.off) + byte(i)
		}
		paged.wrote(w.off, b)
		plain.wrote(w.off, b)
	}
	for _, r := range [][2]int64{{0, n}, {5, 30}, {150, 18}, {31, 2}} {
		if got, want := paged.bytesAt(r[0], r[1]), plain.bytesAt(r[0], r[1]); !bytes.Equal(got, want) {
			t.Errorf("bytes %d..%d: %x, want %x", r[0], r[0]+r[1], got, want)
		}
	}
}

// TestPagedLongLengths: in a paged pool the uniform set is tiled to the
// capacity as whole pages, each of the set's pages crossing the bus once
// and every repeat of it copied on the device in one list; the tiled
// cache is what the record says (the read-only gate passes), a correct
// kernel passes at the capacity and one wrong past 128 rows fails there.
func TestPagedLongLengths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		m        fakeModel
		capacity int
		ok       bool
	}{
		{"correct", fakeModel{}, 256, true},
		{"drift", fakeModel{driftPast: 128}, 256, false},
		// The last page partly past the capacity is built on the host.
		{"capacity inside a page", fakeModel{}, 250, true},
		{"capacity inside a page, drift", fakeModel{driftPast: 128}, 250, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models["k"] = c.m
			b := fakeBackend(t, f)
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			p := pagedPoint("k", abi.PageNHD, abi.PagesShuffled)
			p.Config.Shape.Capacity = c.capacity
			p.ReplayNKV = []int{7, 9, 17, 100, c.capacity, 9}
			rec, err := b.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			failed := failedKinds(rec.Gates)
			if c.ok != (rec.Status == results.StatusOK) || !c.ok && !slices.Equal(failed, []string{"tolerance/uniform"}) {
				t.Fatalf("status %s (%s), failed %v", rec.Status, rec.Error, failed)
			}
			tiled := 0
			for _, g := range rec.Gates {
				if g.Kind == results.GateTolerance && g.NKV == c.capacity && strings.Contains(g.Detail, "rows past 112 tiled") {
					tiled++
					if g.Pass != c.ok {
						t.Errorf("tiled gate at %d: pass %v", c.capacity, g.Pass)
					}
				}
			}
			if tiled == 0 {
				t.Error("no gate at the capacity on the set tiled from 112 rows (100 rounded up to whole 16-row pages)")
			}
			// 16 pages a sequence (15 whole at 250), 7 of them the set's:
			// 9 (8) repeats each of K and V in each of the 2 sequences.
			if want := 2 * 2 * (c.capacity/16 - 112/16); !slices.Contains(f.lists, want) {
				t.Errorf("copy lists of %v pages on the device, want one of %d", f.lists, want)
			}
			for _, in := range b.ws.inputs {
				if !bytes.Equal(in.bytesAt(0, in.n), f.at(in.p)[:in.n]) {
					t.Errorf("the record of %s differs from the device", in.name)
				}
			}
		})
	}
}

// TestDisjointCopies: a copy list is refused exactly when a destination
// overlaps another copy's source or destination (its own source too),
// as the pairwise check says, over random lists.
func TestDisjointCopies(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	overlap := func(a, b cuda.DevPtr, n, m int64) bool { return a < b+devOff(m) && b < a+devOff(n) }
	for range 5000 {
		cs := make([]devCopy, 1+rng.IntN(5))
		for i := range cs {
			cs[i] = devCopy{cuda.DevPtr(rng.IntN(64)), cuda.DevPtr(rng.IntN(64)), int64(rng.IntN(8))}
		}
		want := false
		for i, a := range cs {
			for j, b := range cs {
				if a.n > 0 && b.n > 0 && (overlap(a.dst, b.dst, a.n, b.n) && i != j || overlap(a.dst, b.src, a.n, b.n)) {
					want = true
				}
			}
		}
		if got := disjointCopies(cs) != nil; got != want {
			t.Fatalf("%+v: refused %v, want %v", cs, got, want)
		}
	}
	if disjointCopies([]devCopy{{0, 16, -1}}) == nil {
		t.Error("a negative length accepted")
	}
}

// TestPagedStaleOnDevice: the stale gate of a paged cache writes its
// pages by device copies from scratch, or, where the device has no room
// for the scratch, one write a page; either way the verdicts are the
// same, a kernel that weights the rows past the length by zero is caught
// (within the page the length ends in, and a whole page past it), the
// scratch is freed, and K and V end as their records say.
func TestPagedStaleOnDevice(t *testing.T) {
	t.Parallel()
	type gate struct {
		kind, inputs string
		nkv          int
		pass         bool
		diff         int
	}
	for _, c := range []struct {
		name string
		m    fakeModel
		ok   bool
	}{
		{"correct", fakeModel{}, true},
		{"zero weights to the page's end", fakeModel{zeroTail: 16}, false},
		{"zero weights a page past", fakeModel{zeroTail: 32}, false},
	} {
		var verdicts [2][]gate
		var buffers, writes [2]int
		for i, oom := range []bool{false, true} {
			f := newFakeDevice()
			f.models["k"] = c.m
			b := fakeBackend(t, f)
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			if oom {
				// Room for the L2 flush buffer and nothing else.
				flush := flushBytes(b.env.L2Bytes)
				f.allocOOM = func(n int64) bool { return n != flush }
			}
			rec, err := b.Run(context.Background(), pagedPoint("k", abi.PageNHD, abi.PagesShuffled))
			if err != nil {
				t.Fatal(err)
			}
			failed := failedKinds(rec.Gates)
			if c.ok != (rec.Status == results.StatusOK) || !c.ok && !slices.Contains(failed, "stale/uniform") {
				t.Errorf("%s, scratch out of memory %v: status %s (%s), failed %v", c.name, oom, rec.Status, rec.Error, failed)
			}
			for _, g := range rec.Gates {
				verdicts[i] = append(verdicts[i], gate{string(g.Kind), g.Inputs, g.NKV, g.Pass, g.FirstDiff})
			}
			buffers[i], writes[i] = f.buffers, len(f.written)
			if oom == (f.allocOOMs == 0) {
				t.Errorf("%s, scratch out of memory %v: %d allocations out of memory", c.name, oom, f.allocOOMs)
			}
			for _, in := range b.ws.inputs {
				if !bytes.Equal(in.bytesAt(0, in.n), f.at(in.p)[:in.n]) {
					t.Errorf("%s, scratch out of memory %v: the record of %s differs from the device", c.name, oom, in.name)
				}
			}
		}
		if !slices.Equal(verdicts[0], verdicts[1]) {
			t.Errorf("%s: the gates by device copies\n%v\ndiffer from those by writes\n%v", c.name, verdicts[0], verdicts[1])
		}
		if buffers[0] != buffers[1] {
			t.Errorf("%s: %d buffers held after the run by device copies, %d by writes: the scratch is not freed", c.name, buffers[0], buffers[1])
		}
		// One write a page and one to put it back, against a few images.
		if writes[0]*2 > writes[1] {
			t.Errorf("%s: %d device writes by device copies, %d by writes", c.name, writes[0], writes[1])
		}
	}
}
