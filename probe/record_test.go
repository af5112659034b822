package probe

import (
	"bytes"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/plan"
)

// TestRecordIsTheDevice: after a kernel's gates and probes, the record of
// every read-only buffer (what the gates restore from, and what the stale
// gate's saved rows come from) says byte for byte what the device holds,
// contiguous and paged: every upload, tile, scattered page and restore
// kept the two in step.
func TestRecordIsTheDevice(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]func() *plan.Point{
		"contiguous": func() *plan.Point { return fakePoint("good", 100) },
		"paged":      func() *plan.Point { return pagedPoint("good", abi.PageNHD, abi.PagesShuffled) },
		"paged-hnd":  func() *plan.Point { return pagedPoint("good", abi.PageHND, abi.PagesShuffled) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeDevice()
			b := fakeBackend(t, f)
			if rec := run(t, b, p()); rec.Status != "ok" {
				t.Fatalf("status %s: %s", rec.Status, rec.Error)
			}
			if b.ws == nil || len(b.ws.inputs) == 0 {
				t.Fatal("no workspace records after the run")
			}
			for _, c := range b.ws.inputs {
				want := c.bytesAt(0, c.n)
				got := f.at(c.p)[:c.n]
				if !bytes.Equal(got, want) {
					i := 0
					for got[i] == want[i] {
						i++
					}
					t.Errorf("%s: byte %d of %d: the device holds %#x, the record says %#x", c.name, i, c.n, got[i], want[i])
				}
			}
		})
	}
}
