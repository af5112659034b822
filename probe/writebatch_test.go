package probe

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestCoalesceAsOneByOne: whatever the pieces (touching, overlapping,
// apart, empty, larger than the limit, in any order), writing each run of
// coalesce once leaves the bytes that writing the pieces one by one in
// their order leaves, the runs are disjoint, and a run of touching pieces
// stays within the limit.
func TestCoalesceAsOneByOne(t *testing.T) {
	const space, limit = 4096, 300
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 2000 {
		var cs []bufCopy
		pos := int64(rng.IntN(64))
		for range 1 + rng.IntN(24) {
			n := rng.IntN(400)
			if rng.IntN(8) == 0 {
				n = 0
			}
			switch rng.IntN(4) {
			case 0: // touching the last
			case 1: // apart
				pos += int64(1 + rng.IntN(50))
			default: // anywhere: overlaps too
				pos = int64(rng.IntN(space - 400))
			}
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if pos+int64(n) > space {
				pos = 0
			}
			cs = append(cs, bufCopy{pos, b})
			pos += int64(n)
		}
		want := make([]byte, space)
		for _, c := range cs {
			copy(want[c.dst:], c.b)
		}
		got := make([]byte, space)
		runs := coalesce(cs, limit)
		var end int64 = -1
		for _, run := range runs {
			if run.lo < end {
				t.Fatalf("trial %d: run [%d,%d) starts before the last ended (%d)", trial, run.lo, run.hi, end)
			}
			end = run.hi
			if !run.overlap && len(run.members) > 1 && run.hi-run.lo > limit {
				t.Fatalf("trial %d: a run of touching pieces of %d bytes, limit %d", trial, run.hi-run.lo, limit)
			}
			buf := make([]byte, run.hi-run.lo)
			for i := range buf {
				buf[i] = 0xee // a gap in the run would show
			}
			run.fill(buf, cs)
			copy(got[run.lo:], buf)
		}
		// Bytes no piece covers stay as they were: zero in both.
		if !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("trial %d: byte %d is %#x, one by one %#x (%d pieces, %d runs)", trial, i, got[i], want[i], len(cs), len(runs))
				}
			}
		}
	}
}

// TestCoalesceJoinsPages: a pool's pages written in shuffled order make
// one run per limit's worth of bytes, not one write a page.
func TestCoalesceJoinsPages(t *testing.T) {
	const page, pages = 512, 64
	perm := rand.New(rand.NewPCG(1, 2)).Perm(pages)
	cs := make([]bufCopy, pages)
	for i, p := range perm {
		cs[i] = bufCopy{int64(p * page), make([]byte, page)}
	}
	if runs := coalesce(cs, 8*page); len(runs) != pages/8 {
		t.Errorf("%d runs for %d pages of %d bytes under a limit of 8 pages", len(runs), pages, page)
	}
}

// TestWriteInputsScattered: pieces apart from one another (a set's pages
// shuffled over a pool), touching and overlapping ones among them, land
// on the device as one by one, the small runs through the device's stage
// in few writes, each a copy of its own from there; stageMax bytes of
// small runs take more than one batch.
func TestWriteInputsScattered(t *testing.T) {
	t.Parallel()
	const page = 4096
	rng := rand.New(rand.NewPCG(3, 5))
	for _, pages := range []int{5, 300, 2*stageMax/page + 40} {
		f := newFakeDevice()
		b := fakeBackend(t, f)
		pool := int64(2 * pages * page)
		buf := f.allocBytes(pool)
		r := &pointRun{session: session{b: b, ws: &workspace{}}}
		var cs []bufCopy
		for _, slot := range rng.Perm(2 * pages)[:pages] {
			pg := make([]byte, page)
			for i := range pg {
				pg[i] = byte(rng.Uint32())
			}
			cs = append(cs, bufCopy{int64(slot) * page, pg})
		}
		// Two pieces over one another and one across a page boundary.
		cs = append(cs, bufCopy{cs[0].dst + 100, []byte{1, 2, 3}}, bufCopy{cs[0].dst + 101, []byte{9}},
			bufCopy{cs[1].dst + page - 2, []byte{7, 7, 7, 7}})
		want := make([]byte, pool)
		for _, c := range cs {
			copy(want[c.dst:], c.b)
		}
		writes0 := len(f.written)
		if err := r.writeInputs(buf, cs); err != nil {
			t.Fatal(err)
		}
		if got := f.at(buf)[:pool]; !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%d pages: byte %d is %#x, one by one %#x", pages, i, got[i], want[i])
				}
			}
		}
		runs := len(coalesce(cs, stageMax))
		writes := len(f.written) - writes0
		switch {
		case runs < scatterRuns:
			if f.copies != 0 || writes != runs {
				t.Errorf("%d runs: %d writes, %d device copies; want a write a run", runs, writes, f.copies)
			}
		default:
			batches := int((int64(pages)*page + stageMax - 1) / stageMax)
			if f.copies != runs || writes > batches+1 {
				t.Errorf("%d runs of %d pages: %d writes, %d device copies; want %d copies in about %d writes",
					runs, pages, writes, f.copies, runs, batches)
			}
		}
	}
}
