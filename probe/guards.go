package probe

import (
	"encoding/binary"
	"fmt"

	"github.com/ktune/ktune/internal/results"
)

// Guard regions.
//
// Every buffer sits between two guard regions of guardBytes holding
// canary (allocWorkspace). In an engine the bytes past a tensor's end are
// another tensor: a write a row, a head or a sequence past the end of out,
// or before the start of partial, corrupts it and shows nowhere in the
// kernel's own output. The canaries are read back after every launch whose
// outputs the gates read, and after each timing probe.

// checkGuards reads both guard regions of every buffer and flags the
// first whose canary changed, then writes the canaries back so that the
// next check, and the next point on this workspace, start intact.
func (r *session) checkGuards(nkv int) error {
	d := r.b.gpu
	buf := make([]byte, guardBytes)
	for _, e := range r.ws.table() {
		if e.n == 0 {
			continue
		}
		for _, side := range []struct {
			at   int64 // offset of the region from the buffer's start
			name string
		}{{-guardBytes, "before"}, {e.n, "after"}} {
			p := *e.p + devOff(side.at)
			if err := d.read(buf, p); err != nil {
				return fmt.Errorf("reading the guard region %s %s: %w", side.name, e.name, err)
			}
			first, n := -1, 0
			for i := 0; i < guardBytes; i += 4 {
				if binary.LittleEndian.Uint32(buf[i:]) != canary {
					if first < 0 {
						first = i
					}
					n++
				}
			}
			if first < 0 {
				continue
			}
			off := side.at + int64(first)
			if side.at < 0 {
				// The write nearest the buffer is the evidence: the
				// last changed word before it.
				for i := guardBytes - 4; i >= 0; i -= 4 {
					if binary.LittleEndian.Uint32(buf[i:]) != canary {
						off = side.at + int64(i)
						break
					}
				}
			}
			r.found.Flag(results.Gate{Kind: results.GateGuard, NKV: nkv, Seed: r.p.Seed, Buffer: e.name,
				FirstDiff: int(off), DiffBytes: 4 * n,
				Detail: fmt.Sprintf("a launch wrote %d word(s) in the guard region %s %s, the nearest at byte %+d of the buffer (%d bytes long)",
					n, side.name, e.name, off, e.n)})
			if err := d.fill32(p, canary, guardBytes); err != nil {
				return fmt.Errorf("restoring the guard region %s %s: %w", side.name, e.name, err)
			}
		}
	}
	return nil
}
