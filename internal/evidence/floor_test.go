package evidence

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// floorRecord is an ok record of a 7B-like f16 shape at nkv 32768 (64 MiB
// of K and V), measured at 4000 GB/s, with one probe of the given samples.
func floorRecord(p results.Probe, samples ...float64) results.Record {
	r := okRecord("x")
	r.Config.NKV = 32768
	r.Config.Shape = results.Shape{Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768}
	r.Env = results.Env{Device: "NVIDIA H200", ReadBWGBps: 4000}
	r.Probes = []results.Measurement{{Probe: p, SamplesNS: samples, Bytes: r.Config.KVBytes()}}
	return r
}

func TestMustReadBytes(t *testing.T) {
	r := floorRecord(results.ProbeCold)
	if got := MustReadBytes(&r.Config); got != 32768*4*256*2 {
		t.Errorf("plain: %d bytes", got)
	}
	w := r.Config
	w.Shape.Attention.Window = 1023 // 1024 rows attended
	if got := MustReadBytes(&w); got != 1024*4*256*2 {
		t.Errorf("window 1023: %d bytes", got)
	}
	m := r.Config
	m.Shape.Attention.MLA = abi.MLA{DV: 64, Layout: abi.MLALatent}
	if got := MustReadBytes(&m); got != 32768*4*128*2 {
		t.Errorf("latent MLA reads V out of K: %d bytes", got)
	}
	rg := r.Config
	rg.Shape.Batch, rg.Lengths = 2, []int{100, 200}
	if got := MustReadBytes(&rg); got != 300*4*256*2 {
		t.Errorf("ragged: %d bytes", got)
	}
}

// TestBelowFloor: a positive sample faster than the device can run the
// point is not evidence; one at the floor's margin is.
func TestBelowFloor(t *testing.T) {
	// 64 MiB at 2 × 4000 GB/s: 8389 ns cold; at 8×: 2097 ns hot.
	cases := []struct {
		rec  results.Record
		want Problem
	}{
		{floorRecord(results.ProbeCold, 9000, 9100, 9200), ""},
		{floorRecord(results.ProbeCold, 9000, 8000, 9200), ProblemBelowFloor},
		{floorRecord(results.ProbeHot, 3000, 3000, 3000), ""},
		{floorRecord(results.ProbeHot, 3000, 2000, 3000), ProblemBelowFloor},
		{floorRecord(results.ProbeGraph, 1e-300, 3000, 3000), ProblemBelowFloor},
	}
	noBW := floorRecord(results.ProbeCold, 300, 300, 300)
	noBW.Env.ReadBWGBps = 0 // the launch floor alone
	cases = append(cases, struct {
		rec  results.Record
		want Problem
	}{noBW, ""})
	noBW = floorRecord(results.ProbeCold, 300, 200, 300)
	noBW.Env.ReadBWGBps = 0
	cases = append(cases, struct {
		rec  results.Record
		want Problem
	}{noBW, ProblemBelowFloor})
	for i, c := range cases {
		s := Check([]results.Record{c.rec}, nil, Options{})
		got := Problem("")
		if len(s.Excluded) > 0 {
			got = s.Excluded[0].Problem
		}
		if got != c.want {
			t.Errorf("case %d: problem %q, want %q (%v)", i, got, c.want, s.Excluded)
		}
	}
	r := floorRecord(results.ProbeCold, 16778, 20000)
	if pct := FloorPct(&r, &r.Probes[0]); pct < 49.9 || pct > 50.1 {
		t.Errorf("FloorPct = %g, want 50", pct)
	}
}

// TestCommittedAboveFloor: no committed measurement lies under the floor,
// so that the margins refuse only what no device measured.
func TestCommittedAboveFloor(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../../experiments/results", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".jsonl.gz")) {
			return err
		}
		recs, _, err := results.ReadFile(path)
		if err != nil {
			return err
		}
		for i := range recs {
			r := &recs[i]
			if r.Status != results.StatusOK {
				continue
			}
			for j := range r.Probes {
				n++
				if why := belowFloor(r, &r.Probes[j]); why != "" {
					t.Errorf("%s: %s nkv=%d: %s", path, r.Config.Variant, r.Config.NKV, why)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 1000 {
		t.Fatalf("only %d committed measurements read", n)
	}
}

// TestBytesDisagree: a record whose configuration was edited after its
// samples were taken (its nkv other than what was measured, as the
// never-more-permissive fuzz found) no longer matches the bytes its
// probe recorded, and is a contradiction, not evidence at another nkv.
func TestBytesDisagree(t *testing.T) {
	intact := floorRecord(results.ProbeCold, 30000, 31000, 32000)
	if p, why := problem(&intact, Options{}); p != "" {
		t.Fatalf("intact record: %s (%s)", p, why)
	}
	for name, edit := range map[string]func(r *results.Record){
		"nkv":     func(r *results.Record) { r.Config.NKV /= 2 },
		"batch":   func(r *results.Record) { r.Config.Shape.Batch = 2 },
		"kvheads": func(r *results.Record) { r.Config.Shape.KVHeads = 8 },
		"bytes":   func(r *results.Record) { r.Probes[0].Bytes = 0 },
		"lengths": func(r *results.Record) { r.Config.Shape.Batch, r.Config.Lengths = 2, []int{32768, 100} },
	} {
		r := floorRecord(results.ProbeCold, 30000, 31000, 32000)
		edit(&r)
		if p, why := problem(&r, Options{}); p != ProblemContradiction || !strings.Contains(why, "bytes") {
			t.Errorf("%s edited: problem %q (%s), want a contradiction about the bytes", name, p, why)
		}
	}
}
