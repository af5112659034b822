package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/results"
)

// rerun.jsonl is the landed point of slice.jsonl (d2 SPLITS=32 at
// nkv=32768) measured again in a separate process: the same kernel, so
// the comparison must say "~" and list the other points as old only.
func TestCompareRerun(t *testing.T) {
	old, cur := loadH200(t, "slice.jsonl"), loadH200(t, "rerun.jsonl")
	c, err := Compare(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	probes := 0
	for _, m := range cur[0].Probes {
		if len(m.SamplesNS) > 0 {
			probes++
		}
	}
	if len(c.Rows) != probes || len(c.OnlyNew) != 0 || len(c.OnlyOld) != len(old)-1 {
		t.Errorf("%d rows, %d only-old, %d only-new; want %d, %d, 0", len(c.Rows), len(c.OnlyOld), len(c.OnlyNew), probes, len(old)-1)
	}
	for _, r := range c.Rows {
		if r.Significant || r.Delta() != "~" {
			t.Errorf("%s nkv=%d %s: %s (p=%.3g) for the same kernel measured twice", r.Config, r.NKV, r.Probe, r.Delta(), r.P)
		}
	}
	var out bytes.Buffer
	if err := c.WriteText(&out, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "compare.txt.golden"), out.Bytes())
}

// scaledVariant returns a copy of recs in which every sample of variant v
// is multiplied by f.
func scaledVariant(recs []results.Record, v string, f float64) []results.Record {
	out := make([]results.Record, len(recs))
	for i, r := range recs {
		if r.Config.Variant == v {
			r = relabel(r, v)
			r.Landed = recs[i].Landed
			scaleSamples(&r, f)
		}
		out[i] = r
	}
	return out
}

// A real change is found: slice.jsonl against itself with every d2
// sample ×0.9. The d2 rows must be significant and about −10%, and no
// other row may move.
func TestCompareFindsChange(t *testing.T) {
	old := loadH200(t, "slice.jsonl")
	cur := scaledVariant(old, "d2", 0.9)
	c, err := Compare(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	wantD2, wantOther := 0, 0
	for _, r := range old {
		for _, m := range r.Probes {
			if len(m.SamplesNS) == 0 {
				continue
			}
			if r.Config.Variant == "d2" {
				wantD2++
			} else {
				wantOther++
			}
		}
	}
	var d2, other int
	for _, r := range c.Rows {
		if strings.HasPrefix(r.Config, "d2 ") {
			d2++
			if !r.Significant || math.Abs(r.DeltaPct+10) > 0.01 {
				t.Errorf("%s nkv=%d %s: delta %s (%.2f%%, p=%.3g), want significant −10%%", r.Config, r.NKV, r.Probe, r.Delta(), r.DeltaPct, r.P)
			}
		} else {
			other++
			if r.Significant || r.DeltaPct != 0 {
				t.Errorf("%s nkv=%d %s: delta %.2f%% for an unchanged kernel", r.Config, r.NKV, r.Probe, r.DeltaPct)
			}
		}
	}
	if d2 != wantD2 || other != wantOther {
		t.Errorf("%d d2 rows and %d others, want %d and %d", d2, other, wantD2, wantOther)
	}
}

// A record compared with itself is never a change.
func TestCompareIdentical(t *testing.T) {
	recs := loadH200(t, "slice.jsonl")
	c, err := Compare(recs, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range c.Rows {
		if r.Significant || r.Delta() != "~" {
			t.Errorf("%s nkv=%d %s: %s against itself", r.Config, r.NKV, r.Probe, r.Delta())
		}
	}
}

// Matching ignores the hash and the device: the same point measured on
// another machine still matches.
func TestCompareMatchesAcrossDevices(t *testing.T) {
	old := loadH200(t, "slice.jsonl")
	cur := loadH200(t, "slice.jsonl")
	want := 0
	for i := range cur {
		cur[i].Hash = "other"
		cur[i].Env.Device = "NVIDIA H100"
		cur[i].Env.Arch = "sm_90a"
		want += len(cur[i].Probes)
	}
	c, err := Compare(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != want || len(c.OnlyOld)+len(c.OnlyNew) != 0 {
		t.Errorf("%d rows, %d only-old, %d only-new; want %d, 0, 0", len(c.Rows), len(c.OnlyOld), len(c.OnlyNew), want)
	}
}

// The golden is the one-record rerun (a short file); the round trip runs
// over all of slice.jsonl.
func TestGoBenchRoundTrip(t *testing.T) {
	var small bytes.Buffer
	if err := WriteGoBench(&small, loadH200(t, "rerun.jsonl")); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "export.gobench.golden"), small.Bytes())

	recs := loadH200(t, "slice.jsonl")
	var buf bytes.Buffer
	if err := WriteGoBench(&buf, recs); err != nil {
		t.Fatal(err)
	}

	// Every sample of every measured record, in order.
	type want struct {
		name string
		ns   float64
	}
	var wants []want
	for i := range recs {
		for _, m := range recs[i].Probes {
			for _, ns := range m.SamplesNS {
				wants = append(wants, want{benchName(&recs[i]) + "/probe=" + string(m.Probe), ns})
			}
		}
	}
	r := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "export")
	i := 0
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			t.Fatalf("unexpected record %v", r.Result())
		}
		if i >= len(wants) {
			t.Fatalf("more results than samples")
		}
		// benchfmt drops the "Benchmark" prefix from names.
		if got := "Benchmark" + string(res.Name.Full()); got != wants[i].name {
			t.Errorf("result %d name %q, want %q", i, got, wants[i].name)
		}
		// The sample to a tenth of a nanosecond, within half a tenth.
		tenth := math.Round(wants[i].ns*10) / 10
		if v, ok := res.Value("sec/op"); !ok || v != tenth*1e-9 || math.Abs(tenth-wants[i].ns) > 0.05 {
			if v2, ok2 := res.Value("ns/op"); !ok2 || v2 != tenth {
				t.Errorf("result %d value %v (sec/op %v), want %v ns (%v to a tenth)", i, v2, v, tenth, wants[i].ns)
			}
		}
		if got := string(res.GetConfig("device")); got != "NVIDIA H200" {
			t.Errorf("result %d device %q", i, got)
		}
		// The name's key=value parts come back as benchfmt sees them.
		_, parts := res.Name.Parts()
		if len(parts) == 0 || !bytes.HasPrefix(parts[0], []byte("/variant=")) {
			t.Errorf("result %d parts %q", i, parts)
		}
		i++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(wants) {
		t.Errorf("read %d results, wrote %d samples", i, len(wants))
	}
}

func TestReportMarkdown(t *testing.T) {
	rep, err := Build(loadH200(t, "slice.jsonl"), Options{Layers: 28, StepMS: 12})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plots, err := rep.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "report.md.golden"), md)
	for _, p := range plots {
		rel, _ := filepath.Rel(dir, p.Base)
		if !bytes.Contains(md, []byte("]("+rel+".png)")) {
			t.Errorf("report.md does not embed %s.png", rel)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "tables.csv"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "tables.csv.golden"), csv)
}

// splits.jsonl measured the graph probe, which the projection prefers.
func TestProjection(t *testing.T) {
	rep, err := Build(loadH200(t, "splits.jsonl"), Options{Layers: 28, StepMS: 12})
	if err != nil {
		t.Fatal(err)
	}
	pr := rep.Projection
	if pr == nil || pr.Probe != results.ProbeGraph || len(pr.Rows) == 0 {
		t.Fatalf("projection %+v", pr)
	}
	for _, r := range pr.Rows {
		want := 1000 / (12 + 28*(r.KernelUS-r.LandedUS)/1000)
		if math.Abs(r.TokensPerSec-want) > 1e-9 || r.LandedTokensPerSec != 1000.0/12 {
			t.Errorf("%s nkv=%d: %.3f tokens/s, want %.3f", r.Config, r.NKV, r.TokensPerSec, want)
		}
		if r.Config == "d2 SPLITS=32 NR=4" && r.DeltaStepMS != 0 {
			t.Errorf("landed row has Δstep %v", r.DeltaStepMS)
		}
	}
}

// Compare names same-name shapes apart: sdpa.jsonl holds a "7b" at batch 1
// and at batch 16, which must never share a row name.
func TestCompareSameNameShapes(t *testing.T) {
	recs := loadH200(t, "sdpa.jsonl")
	c, err := Compare(recs, recs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	shapes := map[string]bool{}
	for _, r := range c.Rows {
		k := fmt.Sprintf("%s %s %d %s", r.Shape, r.Config, r.NKV, r.Probe)
		if seen[k] {
			t.Errorf("two rows named %s", k)
		}
		seen[k] = true
		shapes[r.Shape] = true
	}
	if len(shapes) < 2 {
		t.Errorf("shapes %v: the batch-1 and batch-16 shapes share a name", shapes)
	}
}
