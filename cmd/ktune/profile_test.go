package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

const ncuCSV = "../../experiments/results/h200/ncu-d2-s32-n32768.csv"

// TestParseNCU reads the committed H200 cross-check of d2 SPLITS 32 at
// nkv 32768: eight profiled pairs, values with thousands separators.
func TestParseNCU(t *testing.T) {
	f, err := os.Open(ncuCSV)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ks, err := parseNCU(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 16 || ks[0] != (ncuKernel{"attn_partial", 551072}) || ks[1] != (ncuKernel{"attn_combine", 7200}) {
		t.Fatalf("kernels %v", ks)
	}
	step, kernels, err := stepTime([]string{"attn_partial", "attn_combine"}, ks)
	if err != nil {
		t.Fatal(err)
	}
	// Medians of the eight: partial (549536+549664)/2, combine (7136+7168)/2.
	if want := 549600.0 + 7152.0; step != want {
		t.Errorf("step %.0f ns, want %.0f", step, want)
	}
	if kernels[0].N != 8 || kernels[0].PerStep != 1 || kernels[1].MedianUS != 7.152 {
		t.Errorf("kernels %+v", kernels)
	}
	if _, _, err := stepTime([]string{"attn_partial", "other"}, ks); err == nil {
		t.Error("a kernel ncu never profiled gave a step time")
	}
	if _, err := parseNCU(strings.NewReader("==PROF== nothing\n")); err == nil {
		t.Error("output without a table parsed")
	}
	if ks, err := parseNCU(strings.NewReader(`"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"` + "\n" +
		`"0","1","k","gpu__time_duration.sum","usecond","1.5"` + "\n")); err != nil || ks[0].NS != 1500 {
		t.Errorf("usecond: %v %v", ks, err)
	}
}

func TestFunctionName(t *testing.T) {
	for entry, want := range map[string]string{
		"attn_partial":                                                  "attn_partial",
		"gqa_attn_split_partial<__half, 4>":                             "gqa_attn_split_partial",
		"eng::split<float, 128, true>":                                  "split",
		"_Z22gqa_attn_split_combinePKfPfiii":                            "gqa_attn_split_combine",
		"_Z22gqa_attn_split_partialI6__halfLi4EEvPKfPKT_S5_PKiPfiiiiif": "gqa_attn_split_partial",
		"_ZN3eng5splitIfEEvPf":                                          "split",
	} {
		if got := functionName(entry); got != want {
			t.Errorf("functionName(%q) = %q, want %q", entry, got, want)
		}
	}
}

const profileSpec = `name: p
shapes: [{name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [8192, 32768], SPLITS: [32]}
variants: [{name: d2, kernel: d2, defines: {NR: 4}}]
`

// TestProfile runs the command against fakes of ktune's sweep and ncu:
// the sweep records a cold median, ncu writes the committed CSV, and the
// sidecar puts them side by side.
func TestProfile(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(specPath, []byte(profileSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(ncuCSV)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var calls [][]string
	fake := func(_ context.Context, _ io.Writer, name string, args ...string) error {
		calls = append(calls, append([]string{name}, args...))
		if name == "/bin/ktune" { // the measuring sweep
			w, err := results.OpenWriter(args[3])
			if err != nil {
				return err
			}
			defer w.Close()
			rec := results.Record{Schema: results.SchemaVersion, Hash: "h32768", Status: results.StatusOK,
				Config: results.Config{Variant: "d2", Kernel: "d2", NKV: 32768, Splits: 32,
					Shape:   results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768},
					Defines: abi.SortDefines(map[string]string{"HEAD_DIM": "128", "KV_F16": "1", "NR": "4", "SPLITS": "32"})},
				Probes: []results.Measurement{{Probe: results.ProbeCold, Summary: results.Summary{N: 10, Median: 554000}}}}
			return w.Append(&rec)
		}
		i := slices.Index(args, "--log-file")
		return os.WriteFile(args[i+1], csv, 0o644)
	}
	var stdout, stderr bytes.Buffer
	err = runProfile(context.Background(), &stdout, &stderr, []string{specPath, "--only", "nkv=32768", "-o", out},
		profileDeps{run: fake, self: func() (string, error) { return "/bin/ktune", nil }, ncu: func() (string, error) { return "/bin/ncu", nil }})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if len(calls) != 2 || calls[1][0] != "/bin/ncu" {
		t.Fatalf("calls %q", calls)
	}
	ncu := strings.Join(calls[1], " ")
	for _, want := range []string{"--clock-control none", "--cache-control all", "--metrics gpu__time_duration.sum", "--csv",
		"--kernel-name regex:^(attn_partial|attn_combine)$", "--launch-count 20", "--in-process",
		"--only variant=d2,shape=7b,nkv=32768,NR=4,SPLITS=32"} {
		if !strings.Contains(ncu, want) {
			t.Errorf("ncu command lacks %q:\n%s", want, ncu)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "profile.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var row profileRow
	if err := json.Unmarshal(data, &row); err != nil {
		t.Fatal(err)
	}
	if row.Hash != "h32768" || row.KtuneColdUS != 554 || row.NCUUS != 556.752 || math.Abs(row.Ratio-554/556.752) > 1e-12 || row.CSV != "ncu-1-d2.csv" {
		t.Errorf("row %+v", row)
	}
	if !strings.Contains(stdout.String(), "0.995") {
		t.Errorf("table:\n%s", stdout.String())
	}
	// Without --only nothing would be profiled on purpose: a usage error.
	err = runProfile(context.Background(), &stdout, &stderr, []string{specPath, "-o", out}, profileDeps{})
	if exitCode(err) != exitUsage {
		t.Errorf("no --only: %v (exit %d)", err, exitCode(err))
	}
}
