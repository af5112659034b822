package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/ktune/ktune/internal/results"
)

func TestCompare(t *testing.T) {
	old, cur := loadJSONL(t, "fixture.jsonl"), loadJSONL(t, "fixture_new.jsonl")
	c, err := Compare(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	// The new fixture scales d2 by 0.9 and leaves r4 and tc alone: d2 rows
	// must be significant and about −10%, and no unchanged row may be
	// reported as a change beyond noise by more than a couple of percent.
	var d2, other int
	for _, r := range c.Rows {
		if strings.HasPrefix(r.Config, "d2 ") {
			d2++
			if !r.Significant || math.Abs(r.DeltaPct+10) > 2 {
				t.Errorf("%s nkv=%d %s: delta %s (%.2f%%, p=%.3g), want significant ≈ −10%%", r.Config, r.NKV, r.Probe, r.Delta(), r.DeltaPct, r.P)
			}
		} else {
			other++
			if math.Abs(r.DeltaPct) > 2 {
				t.Errorf("%s nkv=%d %s: delta %.2f%% for an unchanged kernel", r.Config, r.NKV, r.Probe, r.DeltaPct)
			}
		}
	}
	if d2 != 2*3*3 || other != 2*3*3 {
		t.Errorf("%d d2 rows and %d others, want 18 and 18", d2, other)
	}
	var out bytes.Buffer
	if err := c.WriteText(&out, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt.golden", out.Bytes())
}

// A record compared with itself is never a change.
func TestCompareIdentical(t *testing.T) {
	recs := loadJSONL(t, "fixture.jsonl")
	c, err := Compare(recs, recs)
	if err != nil {
		t.Fatal(err)
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
	old := loadJSONL(t, "fixture.jsonl")
	cur := loadJSONL(t, "fixture.jsonl")
	for i := range cur {
		cur[i].Hash = "other"
		cur[i].Env.Device = "NVIDIA H100"
		cur[i].Env.Arch = "sm_90a"
	}
	c, err := Compare(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 36 || len(c.OnlyOld)+len(c.OnlyNew) != 0 {
		t.Errorf("%d rows, %d only-old, %d only-new; want 36, 0, 0", len(c.Rows), len(c.OnlyOld), len(c.OnlyNew))
	}
}

func TestGoBenchRoundTrip(t *testing.T) {
	recs := loadJSONL(t, "fixture.jsonl")
	var buf bytes.Buffer
	if err := WriteGoBench(&buf, recs); err != nil {
		t.Fatal(err)
	}
	golden(t, "export.gobench.golden", buf.Bytes())

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
		if v, ok := res.Value("sec/op"); !ok || v != wants[i].ns*1e-9 {
			if v2, ok2 := res.Value("ns/op"); !ok2 || v2 != wants[i].ns {
				t.Errorf("result %d value %v (sec/op %v), want %v ns", i, v2, v, wants[i].ns)
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

func TestGate(t *testing.T) {
	recs := loadJSONL(t, "gate.jsonl")
	for _, tc := range []struct {
		name    string
		opts    GateOptions
		verdict Verdict
	}{
		{"slower", GateOptions{Candidate: "slow", Threshold: 0.02}, VerdictRegression},
		{"onebyte", GateOptions{Candidate: "onebyte", Threshold: 0.02}, VerdictNumerics},
		{"noise", GateOptions{Candidate: "same", Threshold: 0.02}, VerdictPass},
		// Pinned to its slow configuration, "same" regresses.
		{"pinned", GateOptions{Candidate: "same", Defines: map[string]string{"SPLITS": "64"}, Threshold: 0.02}, VerdictRegression},
		// A threshold above the slowdown lets the slow candidate through.
		{"threshold", GateOptions{Candidate: "slow", Threshold: 0.2}, VerdictPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Gate(recs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, tc.verdict)
			}
			var out bytes.Buffer
			if err := res.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "gate_"+tc.name+".txt.golden", out.Bytes())
			golden(t, "gate_"+tc.name+".json.golden", append(js, '\n'))
		})
	}
}

func TestGateMissingAndErrors(t *testing.T) {
	recs := loadJSONL(t, "gate.jsonl")
	if _, err := Gate(recs, GateOptions{Candidate: "nosuch"}); err == nil {
		t.Error("no error for an unknown candidate")
	}
	// Drop the candidate's record at one nkv: the point is missing.
	var cut []results.Record
	for _, r := range recs {
		if r.Config.Variant == "same" && r.Config.NKV == 8192 {
			continue
		}
		cut = append(cut, r)
	}
	res, err := Gate(cut, GateOptions{Candidate: "same", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictIncomplete || len(res.Missing) != 1 {
		t.Errorf("verdict %s, missing %q; want incomplete with one point", res.Verdict, res.Missing)
	}
	// A bitwise-class candidate without a recorded bitwise gate fails.
	var nogate []results.Record
	for _, r := range recs {
		if r.Config.Variant == "same" {
			r.Gates = nil
		}
		nogate = append(nogate, r)
	}
	res, err = Gate(nogate, GateOptions{Candidate: "same", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictNumerics {
		t.Errorf("verdict %s without gate evidence, want numerics", res.Verdict)
	}
}

func TestReportMarkdown(t *testing.T) {
	rep, err := Build(loadJSONL(t, "fixture.jsonl"), Options{Layers: 28, StepMS: 12})
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
	golden(t, "report.md.golden", md)
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
	golden(t, "tables.csv.golden", csv)
}

func TestProjection(t *testing.T) {
	rep, err := Build(loadJSONL(t, "fixture.jsonl"), Options{Layers: 28, StepMS: 12})
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
		if strings.HasPrefix(r.Config, "r4") && r.DeltaStepMS != 0 {
			t.Errorf("landed row has Δstep %v", r.DeltaStepMS)
		}
	}
}
