package probe

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/kernels"
	"github.com/ktune/ktune/plan"
)

// gpuBackend opens a backend on device 0 or skips the test.
func gpuBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := New(Options{CacheDir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		if cuda.NoUsableDevice(err) {
			t.Skipf("no usable GPU here: %v", err)
		}
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// refPoint is a point of testdata/ref.cu: 8 query heads over 2 KV heads
// (GQA), head_dim 64, batch 2, SPLITS 8, built with extra defines.
func refPoint(t *testing.T, nkv int, extra ...abi.Define) *plan.Point {
	t.Helper()
	text, err := os.ReadFile("testdata/ref.cu")
	if err != nil {
		t.Fatal(err)
	}
	defs := append([]abi.Define{
		{Name: "HEAD_DIM", Value: "64"}, {Name: "KV_F16", Value: "1"}, {Name: "SPLITS", Value: "8"},
	}, extra...)
	shape := abi.Shape{Name: "tiny", Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "f16", Batch: 2, Capacity: 1024}
	key := "ref"
	for _, d := range extra {
		key += " " + d.Name + "=" + d.Value
	}
	p := &plan.Point{
		Hash: key,
		Config: results.Config{
			Spec: "test", Variant: "ref", Kernel: "testdata/ref.cu", Defines: defs, Shape: shape,
			NKV: nkv, Splits: 8,
		},
		Source:  plan.Source{Name: "ref.cu", Text: string(text), Partial: "attn_partial", Combine: "attn_combine"},
		GateKey: key,
		GateNKV: []int{1, 7, 8, 9, 29, 64, 65, 512, 1024, 5000},
		// As the plan chooses them (plan.replayNKV) for SPLITS 8.
		CaptureNKV: 1,
		ReplayNKV:  []int{7, 9, 17, 1024, 9},
		Seed:       1,
		Tol:        plan.Tolerance{MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6},
		Probes:     []results.Probe{results.ProbeCold, results.ProbeHot, results.ProbeGraph},
		Measure:    plan.Measure{Warmup: 2, MinSamples: 5, MaxSamples: 30, MaxNoise: 0.05, BudgetSec: 0.5, HotBatch: 10, TimeoutSec: 60},
	}
	complete(t, p)
	return p
}

// complete gives a point built by hand its ABI launches and flags, as the
// plan would.
func complete(t *testing.T, p *plan.Point) {
	t.Helper()
	if err := plan.Complete(p); err != nil {
		t.Fatal(err)
	}
}

func TestGPUEnv(t *testing.T) {
	b := gpuBackend(t)
	env, err := b.Env(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("env: %+v", env)
	if env.SMs <= 0 || env.L2Bytes <= 0 || env.MemBytes <= 0 || !strings.HasPrefix(env.Arch, "sm_") {
		t.Errorf("device attributes missing: %+v", env)
	}
	// Any GPU this tool targets reads faster than 100 GB/s and slower than
	// 20 TB/s; outside that the measurement is broken, not the GPU.
	if env.ReadBWGBps < 100 || env.ReadBWGBps > 20000 {
		t.Errorf("read bandwidth %.1f GB/s is implausible", env.ReadBWGBps)
	}
	mhz, err := b.sampleClock()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SM clock %.0f MHz (default %.0f)", mhz, env.ClockMHz)
	if mhz < 100 || mhz > 5000 {
		t.Errorf("SM clock %.0f MHz is implausible", mhz)
	}
}

func TestGPURunGood(t *testing.T) {
	b := gpuBackend(t)
	p := refPoint(t, 700)
	twin := refPoint(t, 700, abi.Define{Name: "TWIN", Value: "1"})
	p.Twin = twin
	rec, err := b.Run(context.Background(), p)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rec.Status != results.StatusOK {
		t.Fatalf("status %s: %s\ngates: %+v\ncompile log: %s", rec.Status, rec.Error, rec.Gates, rec.Compile.Log)
	}
	kinds := map[results.GateKind]int{}
	for _, g := range rec.Gates {
		kinds[g.Kind]++
		if g.NKV > 1024 {
			t.Errorf("gate at nkv %d beyond the capacity", g.NKV)
		}
	}
	// Which gates run is decided above the device and tested on the fake
	// (gates_test.go); here every kind must have run through the driver:
	// memsets, copies, a fresh module, a captured graph.
	for _, k := range []results.GateKind{results.GateWritten, results.GateTolerance, results.GateBitwise,
		results.GateDeterminism, results.GateFresh, results.GateReplay} {
		if kinds[k] == 0 {
			t.Errorf("no %s gate: %v", k, kinds)
		}
	}
	if len(rec.Resources) != 2 || rec.Resources[0].Registers <= 0 || rec.Resources[0].Occupancy <= 0 {
		t.Errorf("resources %+v", rec.Resources)
	}
	if len(rec.Probes) != 3 {
		t.Fatalf("%d probes", len(rec.Probes))
	}
	wantBytes := int64(2 * 2 * 700 * 2 * 64 * 2) // K+V × batch × rows × kv_heads × dims × f16
	for _, m := range rec.Probes {
		t.Logf("%s: median %.0f ns, noise %.3f, n %d, %.1f GB/s, clock %.0f MHz, converged %v %s",
			m.Probe, m.Summary.Median, m.Summary.RelNoise, m.Summary.N, m.GBps, m.ClockMHz, m.Converged, m.Note)
		if m.Summary.N < 1 || m.Summary.Median <= 0 || m.Bytes != wantBytes || m.GBps <= 0 || m.ClockMHz <= 0 {
			t.Errorf("%s: %+v", m.Probe, m)
		}
		if !m.Converged && m.Note == "" {
			t.Errorf("%s: unconverged without a note", m.Probe)
		}
	}
	if cold, hot := rec.Probe(results.ProbeCold), rec.Probe(results.ProbeHot); cold.Summary.Median < hot.Summary.Median/2 {
		t.Errorf("cold %.0f ns is far below hot %.0f ns", cold.Summary.Median, hot.Summary.Median)
	}

	// A second point of the same GateKey reuses the verdicts and the CUBIN.
	p2 := refPoint(t, 300)
	p2.Twin = twin
	rec2, err := b.Run(context.Background(), p2)
	if err != nil || rec2.Status != results.StatusOK {
		t.Fatalf("second point: %v %s %s", err, rec2.Status, rec2.Error)
	}
	if !rec2.Compile.Cached || len(rec2.Gates) != len(rec.Gates) {
		t.Errorf("second point: cached %v, %d gates (first had %d)", rec2.Compile.Cached, len(rec2.Gates), len(rec.Gates))
	}
}

func TestGPURunGateFailures(t *testing.T) {
	b := gpuBackend(t)
	ctx := context.Background()

	rec, err := b.Run(ctx, refPoint(t, 100, abi.Define{Name: "BUG", Value: "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusGateFailed || len(rec.Probes) != 0 {
		t.Errorf("dropped rows: status %s, %d probes", rec.Status, len(rec.Probes))
	}
	for _, g := range rec.Gates {
		if g.Kind == results.GateTolerance && g.Pass {
			t.Errorf("tolerance passed at nkv %d with rows dropped: %+v", g.NKV, g)
		}
	}

	rec, err = b.Run(ctx, refPoint(t, 100, abi.Define{Name: "SKIP_IDLE", Value: "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusGateFailed {
		t.Errorf("unwritten idle splits: status %s", rec.Status)
	}
	// Which lengths fail is decided above the device (gates_test.go); here
	// it is enough that the poison survived the real memset, launch and copy.
	unwrittenSeen := false
	for _, g := range rec.Gates {
		unwrittenSeen = unwrittenSeen || (g.Kind == results.GateWritten && !g.Pass && g.DiffBytes > 0)
	}
	if !unwrittenSeen {
		t.Error("no written gate saw the poison of an unwritten idle split")
	}

	p := refPoint(t, 100)
	p.Twin = refPoint(t, 100, abi.Define{Name: "BUG", Value: "1"})
	rec, err = b.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusGateFailed {
		t.Errorf("twin differs: status %s", rec.Status)
	}
	failed := 0
	for _, g := range rec.Gates {
		if g.Kind == results.GateBitwise && !g.Pass {
			failed++
			if g.DiffBytes == 0 || g.FirstDiff < 0 || g.Twin != "ref" {
				t.Errorf("bitwise evidence: %+v", g)
			}
		}
	}
	if failed == 0 {
		t.Error("no bitwise gate failed against a twin that drops rows")
	}
}

func TestGPURunCompileFailedAndOOM(t *testing.T) {
	b := gpuBackend(t)
	ctx := context.Background()
	p := refPoint(t, 100)
	p.Source.Text += "\nthis is not C++;\n"
	rec, err := b.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusCompileFailed || !strings.Contains(rec.Compile.Log, "error") {
		t.Errorf("status %s, log %q", rec.Status, rec.Compile.Log)
	}

	p = refPoint(t, 100)
	// 64 × 2^20 rows × 16 heads × 128 dims × 4 bytes = 512 GiB per buffer.
	p.Config.Shape = abi.Shape{Heads: 16, KVHeads: 16, HeadDim: 128, KVDtype: "f32", Batch: 64, Capacity: 1 << 20}
	p.Config.Defines[0].Value, p.Config.Defines[1].Value = "128", "0"
	rec, err = b.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusOOM || !strings.Contains(rec.Error, "512.00 GiB") {
		t.Errorf("status %s: %s", rec.Status, rec.Error)
	}
	// The backend is still usable after refusing a point.
	if rec, err = b.Run(ctx, refPoint(t, 50)); err != nil || rec.Status != results.StatusOK {
		t.Errorf("after oom: %v %s %s", err, rec.Status, rec.Error)
	}
}

// builtinPoint is a point of an embedded kernel at the 7B anchor shape.
func builtinPoint(t *testing.T, file string, nkv, splits int) *plan.Point {
	t.Helper()
	src := plan.Source{Name: file, Headers: map[string]string{}, Partial: "attn_partial", Combine: "attn_combine"}
	var err error
	if src.Text, err = kernels.Read(file); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"abi.cuh", "combine.cuh"} {
		if src.Headers[h], err = kernels.Read(h); err != nil {
			t.Fatal(err)
		}
	}
	name := strings.TrimSuffix(file, ".cu")
	sp := strconv.Itoa(splits)
	p := &plan.Point{
		Hash: name + sp + strconv.Itoa(nkv),
		Config: results.Config{
			Variant: name, Kernel: name, NKV: nkv, Splits: splits,
			Defines: []abi.Define{{Name: "HEAD_DIM", Value: "128"}, {Name: "KV_F16", Value: "1"}, {Name: "NR", Value: "4"}, {Name: "SPLITS", Value: sp}},
			Shape:   abi.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768},
		},
		Source:  src,
		GateKey: name + sp,
		GateNKV: []int{1, 29, 52, 512, 1641},
		// As the plan chooses them (plan.replayNKV).
		CaptureNKV: 1,
		ReplayNKV:  []int{splits - 1, splits + 1, 2*splits + 1, 1641, 32768, splits + 1},
		Seed:       1,
		Tol:        plan.Tolerance{MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6},
		Probes:     []results.Probe{results.ProbeCold, results.ProbeHot, results.ProbeGraph},
		Measure:    plan.Measure{Warmup: 3, MinSamples: 10, MaxSamples: 200, MaxNoise: 0.03, BudgetSec: 1, HotBatch: 20, TimeoutSec: 120},
	}
	complete(t, p)
	return p
}

// TestGPUBuiltinD2 runs the embedded d2 kernel, gated bitwise against r4,
// at the anchor shape of the H200 notes, and logs what the probes saw
// next to those anchors (seed D2, cold: 84.4 µs at nkv 8192 SPLITS 32,
// 54.3 µs at SPLITS 64).
func TestGPUBuiltinD2(t *testing.T) {
	b := gpuBackend(t)
	for _, splits := range []int{32, 64} {
		for _, nkv := range []int{8192, 32768} {
			p := builtinPoint(t, "d2.cu", nkv, splits)
			p.Twin = builtinPoint(t, "r4.cu", nkv, splits)
			rec, err := b.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != results.StatusOK {
				t.Fatalf("d2 SPLITS=%d nkv %d: %s: %s\n%s", splits, nkv, rec.Status, rec.Error, rec.Compile.Log)
			}
			for _, m := range rec.Probes {
				t.Logf("d2 SPLITS=%d nkv %5d %-5s median %7.1f µs  noise %.3f  n %3d  %6.0f GB/s (%4.1f%% of read BW)  clock %.0f MHz  %s",
					splits, nkv, m.Probe, m.Summary.Median/1e3, m.Summary.RelNoise, m.Summary.N, m.GBps, m.PctBW, m.ClockMHz, m.Note)
			}
			t.Logf("resources: %+v", rec.Resources)
			if b.disasm != nil && rec.Resources[0].LoadsBeforeChain < 0 {
				t.Errorf("a disassembler is installed but attn_partial has no SASS load count")
			}
		}
	}
}
