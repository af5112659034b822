package evidence

import (
	"fmt"
	"math"

	"github.com/ktune/ktune/internal/results"
)

// The physical floor: the least time a sample of a point can take on the
// device that recorded it. A sample below it is no measurement (an edit,
// a clock that jumped, a timer read wrong) and its record is a
// contradiction, as a negative sample is: a decision resting on it would
// rest on a time no kernel can take.
//
// The floor is the larger of two bounds, each with a margin wide enough
// that no sample a device measured falls under it:
//
//   - the launch floor, LaunchFloorNS: a record carries no launch time of
//     its own device, so the documented constant stands for it;
//   - the read floor: the bytes of K and V the point must read
//     (MustReadBytes) at ReadMargin(probe) × the read bandwidth measured
//     in the same run (Env.ReadBWGBps). A record without a measured
//     bandwidth has the launch floor only.

// LaunchFloorNS is the least time of one timed sample (a partial+combine
// launch pair, or one launch of a kernel that needs no combine), in ns.
// On Hopper an empty kernel's launch pair takes microseconds end to end,
// and a pair replayed from a graph or batched back to back over 1 µs; the
// fastest sample in the committed H200 results is 1790 ns (a graph pair
// at nkv=1). 250 ns stays a factor 7 below that.
const LaunchFloorNS = 250

// ReadMargin is how many times the measured streaming read bandwidth a
// probe may appear to read at. Cold samples start with L2 flushed, so they
// read from device memory: the committed H200 results reach 1.10× the
// measured bandwidth (the float4 read kernel stays ~10% under what the
// best kernels draw), and 2 leaves room for another GPU's. Hot and graph
// samples may find the K and V of a small point in L2, whose bandwidth on
// Hopper is about 2–3× device memory's: 8 leaves room for that.
func ReadMargin(p results.Probe) float64 {
	if p == results.ProbeCold {
		return 2
	}
	return 8
}

// MustReadBytes is the least number of bytes a point of c reads: the K
// rows (and V rows, unless MLA reads V out of K) that its query tokens
// attend, at the element size of the KV type. Rows outside a window are
// left out, and so are the queries, the scales and the outputs: a floor
// counts only what no kernel can skip.
func MustReadBytes(c *results.Config) int64 {
	sh := &c.Shape
	if sh.KVDtype == "" || sh.KVHeads < 1 || sh.HeadDim < 1 {
		return 0
	}
	a := sh.Attention
	width := int64(sh.HeadDim)
	if !a.Latent() {
		width += int64(a.VDim(sh.HeadDim))
	}
	lengths := c.Lengths
	if len(lengths) != sh.Batch {
		lengths = make([]int, max(sh.Batch, 0))
		for i := range lengths {
			lengths[i] = c.NKV
		}
	}
	var rows int64
	for _, n := range lengths {
		if n < 1 {
			continue
		}
		// The union of the rows the query tokens attend: the first
		// token's lowest row up to the last token's own.
		lo, _ := a.Rows(n, 0)
		_, hi := a.Rows(n, a.Queries()-1)
		rows += int64(max(0, min(hi, n)-max(lo, 0)))
	}
	return rows * int64(sh.KVHeads) * width * int64(sh.KVType().Bytes)
}

// FloorNS is the physical floor of a sample of probe p in r, in ns.
func FloorNS(r *results.Record, p results.Probe) float64 {
	floor := float64(LaunchFloorNS)
	bw := r.Env.ReadBWGBps
	if bw > 0 && !math.IsInf(bw, 0) {
		// bytes / (GB/s) is ns: 1 GB/s is one byte per ns.
		floor = max(floor, float64(MustReadBytes(&r.Config))/(bw*ReadMargin(p)))
	}
	return floor
}

// FloorPct is how close the fastest of m's samples came to the physical
// floor of its probe, in percent (100 × floor / fastest sample): above 100
// no device could have measured it. 0 when m has no positive sample.
func FloorPct(r *results.Record, m *results.Measurement) float64 {
	fastest := math.Inf(1)
	for _, x := range m.SamplesNS {
		if x > 0 {
			fastest = min(fastest, x)
		}
	}
	if math.IsInf(fastest, 1) {
		return 0
	}
	return 100 * FloorNS(r, m.Probe) / fastest
}

// belowFloor says which sample of m lies under the physical floor, or "".
func belowFloor(r *results.Record, m *results.Measurement) string {
	floor := FloorNS(r, m.Probe)
	for j, x := range m.SamplesNS {
		if x < floor {
			return fmt.Sprintf("%s sample %d is %g ns, below the %.0f ns this point can take on %s (%s)",
				m.Probe, j, x, floor, r.Env.Device, floorWhy(r, m.Probe, floor))
		}
	}
	return ""
}

// floorWhy says which bound set the floor.
func floorWhy(r *results.Record, p results.Probe, floor float64) string {
	if floor > LaunchFloorNS {
		return fmt.Sprintf("%d bytes it must read at %g× the measured %.0f GB/s", MustReadBytes(&r.Config), ReadMargin(p), r.Env.ReadBWGBps)
	}
	return "the launch floor"
}
