package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/abi"
)

// gateNKV returns the context lengths a point's gates run at: the spec's
// gate lengths plus the lengths where a split's row range changes shape.
// With chunk = ceil(nkv/SPLITS), nkv = k·SPLITS gives every split exactly k
// rows, k·SPLITS+1 grows the chunk by one and leaves the tail splits idle,
// and k·SPLITS−1 leaves the last split one row short; k = 1, 2 covers the
// first two chunk sizes, and SPLITS·c ± 1 with c = ceil(max gate/SPLITS)
// repeats the test around the longest gated length. Below SPLITS (SPLITS/2
// and SPLITS−1) most splits get no row at all, which is where the idle-split
// path (max −inf, sum 0) shows. Lengths above the capacity are dropped.
func gateNKV(gates []int, splits, capacity int) []int {
	set := map[int]bool{}
	add := func(n int) {
		if n >= 1 && n <= capacity {
			set[n] = true
		}
	}
	most := 0
	for _, n := range gates {
		add(n)
		most = max(most, n)
	}
	if splits >= 1 {
		for k := 1; k <= 2; k++ {
			add(k*splits - 1)
			add(k * splits)
			add(k*splits + 1)
		}
		c := (most + splits - 1) / splits
		add(splits*c - 1)
		add(splits*c + 1)
		add(splits / 2)
		add(splits - 1)
	}
	out := make([]int, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// replayNKV returns the replay gate's lengths: the capture length and the
// replays, in the order they run. The capture is at 1 row, below every
// split boundary (a grid that reads nkv is then at its smallest). The
// replays climb across the boundaries (SPLITS−1 rows: idle splits;
// SPLITS+1 and 2·SPLITS+1: the chunk grows by one, the tail splits go
// idle), past the longest gate length and up to the capacity, then drop
// back to SPLITS+1: a kernel that keeps the longest length seen in device
// memory walks the capacity's rows there. Every replay at or below the
// longest gate length is also checked against the oracle, so all but the
// capacity are chosen there.
func replayNKV(gates []int, splits, capacity int) (capture int, replays []int) {
	most := 0
	for _, n := range gates {
		most = max(most, n)
	}
	for _, n := range []int{splits - 1, splits + 1, 2*splits + 1, most, capacity, splits + 1} {
		if n >= 1 && n <= capacity && (len(replays) == 0 || replays[len(replays)-1] != n) {
			replays = append(replays, n)
		}
	}
	return 1, replays
}

// keys computes the point's GateKey and Hash (see Build).
func (b *builder) keys(pt *Point) (gateKey, hashKey string) {
	h := sha256.New()
	field := func(name, value string) { fmt.Fprintf(h, "%s %d\n%s\n", name, len(value), value) }
	num := func(name string, x float64) { field(name, strconv.FormatFloat(x, 'g', -1, 64)) }
	c, s := &pt.Config, &pt.Source
	field("format", "ktune point v1")
	field("variant", c.Variant)
	field("source", s.Name)
	field("text", s.Text)
	names := make([]string, 0, len(s.Headers))
	for n := range s.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		field("header", n)
		field("header-text", s.Headers[n])
	}
	field("entry", s.Partial+" "+s.Combine)
	if s.Fused {
		// Only when set, so that the hashes of every plain kernel's
		// recorded results stay what they were before the fused ABI.
		field("fused", "true")
	}
	for _, d := range c.Defines {
		field("define", d.Name+"="+d.Value)
	}
	shape, attention := c.Shape.HashText()
	field("shape", shape)
	if attention != "" {
		// Only when set, so that plain shapes keep their hashes.
		field("attention", attention)
	}
	if pt.Geometry != nil {
		// The grid reads nkv: its expressions, not their value at this nkv,
		// make the kernel, so that every length shares one gate verdict
		// (the replay gate's failure included).
		if len(pt.Geometry.Steps) > 0 {
			// Every launch follows nkv: their expressions, apart so that
			// the points whose first grid alone reads nkv keep their
			// hashes.
			field("geometry", fmt.Sprint(pt.Geometry.Grid, c.Block, c.CombineBlock))
			field("geometry-steps", fmt.Sprint(pt.Geometry.Steps, pt.Geometry.Args))
		} else {
			field("geometry", fmt.Sprint(pt.Geometry.Grid, c.Block, c.SharedBytes, c.CombineGrid, c.CombineBlock))
		}
	} else {
		field("geometry", fmt.Sprint(c.Grid, c.Block, c.SharedBytes, c.CombineGrid, c.CombineBlock))
	}
	field("flags", strings.Join(pt.Flags, " "))
	field("arch", b.arch)
	field("gate-nkv", fmt.Sprint(pt.GateNKV))
	field("replay-nkv", fmt.Sprint(pt.CaptureNKV, pt.ReplayNKV))
	if pt.NeverCaptured {
		field("graph", "never")
	}
	// A budget decides the point's status; none keeps the older hashes.
	if !pt.Budget.IsZero() {
		field("budget", pt.Budget.String())
	}
	field("seed", strconv.FormatUint(pt.Seed, 10))
	num("max-abs", pt.Tol.MaxAbs)
	num("max-rel", pt.Tol.MaxRel)
	num("nmse", pt.Tol.NMSE)
	field("bitwise-with", c.BitwiseWith)
	if pt.Twin != nil {
		field("twin", pt.Twin.GateKey)
	}
	// The rows of a page decide where every row of K and V lies; only
	// when paged, so that every other hash stays as it was.
	if pt.PageSize > 0 {
		field("page-size", strconv.Itoa(pt.PageSize))
	}
	// An engine's kernel: its declared signature (entries, arguments, io)
	// and a prebuilt artifact's digest. Only when they differ from the
	// ABI's, so that the hashes of the ABI kernels' records stay as they
	// were; the headers of its include directories are in Headers above.
	if !isABI(pt) {
		field("signature", signatureText(pt))
		field("workspace-bytes", strconv.FormatInt(pt.WorkspaceBytes, 10))
		if len(pt.Scratch) > 0 {
			// Only when declared, so that every other signature keeps its hash.
			field("scratch", abi.ScratchText(pt.Scratch))
		}
		for _, pl := range pt.Planned {
			field("planned", pl.String())
		}
		if len(pt.PlannedBufs) > 0 {
			field("planned-entries", abi.PlannedText(pt.PlannedBufs))
		}
		for _, l := range pt.Launches {
			if pt.Geometry != nil && len(pt.Geometry.Steps) > 0 {
				// Grids and shared memory follow nkv: the expressions,
				// hashed above, make the kernel's launches.
				field("launch", fmt.Sprint(l.Entry, l.Block))
				continue
			}
			field("launch", fmt.Sprint(l.Entry, l.Grid, l.Block, l.Shared))
		}
	}
	// Programmatic dependent launch changes how the step runs (the PDL
	// define alone would not say it: a kernel may take PDL and be launched
	// plainly). Only when set, so that every other hash stays as it was.
	// So does a launch in thread-block clusters (the CLUSTER_* defines do
	// not say which launch has it), also only when set.
	for i, l := range pt.Launches {
		if l.Programmatic {
			field("programmatic-launch", strconv.Itoa(i))
		}
		if l.Cluster != ([3]int{}) {
			field("cluster-launch", fmt.Sprint(i, " ", l.Cluster))
		}
	}
	switch {
	case s.Missing != "":
		field("artifact", s.ArtifactKind+" missing")
	case s.ArtifactSHA256 != "":
		field("artifact", s.ArtifactKind+" sha256:"+s.ArtifactSHA256)
	}
	// A step whose launches come from several files hashes each file's
	// bytes, and each launch its Triton metadata; only when set, so that
	// every other hash stays as it was.
	for _, m := range s.Modules {
		field("module", m.HashText())
	}
	// The input-set waivers change what passes; only when set, so that
	// every other hash stays as it was.
	if t := waiverText(pt.Waivers); t != "" {
		field("waivers", t)
	}
	// So does a declaration about the rows past each length (the stale
	// gate's patterns); only when declared, likewise.
	if pt.Stale.Declared() {
		field("stale", fmt.Sprintf("%s %q", pt.Stale.Rows, pt.Stale.Reason))
	}
	// An engine build's inputs; only when built so.
	if s.BuildKey != "" {
		field("build", s.BuildKey)
	}
	// A sealed kernel's compile defines are the forwarded ones; only when
	// set, so that every other hash stays as it was.
	if s.Sealed || len(s.Forwarded) > 0 {
		field("forwarded", fmt.Sprint(s.Sealed, " ", s.Forwarded.String()))
	}
	// The SM count the planned arrays, scratch and arguments were
	// evaluated at; only when one reads it, so that every other hash
	// stays as it was.
	if pt.SMs != 0 {
		field("point-sms", strconv.Itoa(pt.SMs))
	}
	for i, l := range pt.Launches {
		if l.SMs != 0 || l.BlocksPerSM != 0 {
			field("device-symbols", fmt.Sprint(i, " sms ", l.SMs, " blocks_per_sm ", l.BlocksPerSM))
		}
		if l.SharedSymbol != "" {
			field("shared-symbol", fmt.Sprint(i, " ", l.SharedSymbol))
		}
		if l.Metadata != "" {
			field("launch-metadata", fmt.Sprint(i, " sha256:", l.Metadata))
		}
	}
	gateKey = digest(h)
	field("nkv", strconv.Itoa(c.NKV))
	if len(c.Lengths) > 0 {
		// Ragged lengths change what the timed launches read. Only when
		// set, so that the hashes of every uniform point stay as they were.
		field("lengths", fmt.Sprint(c.Lengths))
	}
	if pt.Geometry != nil {
		field("grid", fmt.Sprint(c.Grid))
	}
	m := pt.Measure
	for _, x := range []float64{float64(m.Warmup), float64(m.MinSamples), float64(m.MaxSamples), m.MaxNoise,
		m.BudgetSec, float64(m.HotBatch), m.TimeoutSec} {
		num("measure", x)
	}
	for _, p := range pt.Probes {
		field("probe", string(p))
	}
	return gateKey, digest(h)
}

// digest returns the first 16 hex digits of the hash so far; h stays
// usable, so the Hash extends the GateKey's encoding.
func digest(h hash.Hash) string {
	return hex.EncodeToString(h.Sum(nil))[:16]
}
