package probe

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

// loadPlan plans a spec file for the backend's device.
func loadPlan(t *testing.T, b *Backend, path string) *plan.Plan {
	t.Helper()
	s, err := spec.Load(path, variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(s, b.arch)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runOK(t *testing.T, b *Backend, p *plan.Point) results.Record {
	t.Helper()
	rec, err := b.Run(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", p.Config.Variant, err)
	}
	if rec.Status != results.StatusOK {
		t.Fatalf("%s nkv %d: %s: %s\ngates %+v\nlog %s", p.Config.Variant, p.Config.NKV, rec.Status, rec.Error, rec.Gates, rec.Compile.Log)
	}
	for _, m := range rec.Probes {
		t.Logf("%s nkv %d %-5s median %8.1f µs n %d", p.Config.Variant, p.Config.NKV, m.Probe, m.Summary.Median/1e3, m.Summary.N)
	}
	return rec
}

// TestGPUEngineSteps runs a declared signature of three launches: entry
// points by name expression (a template among them), a header from the
// include directory, an extra flag, f16 q and out, bhsd K/V, seqlens, a
// workspace, lse and counters; the gates judge out in f16 and the replay
// gate captures all three launches.
func TestGPUEngineSteps(t *testing.T) {
	b := gpuBackend(t)
	p := loadPlan(t, b, "testdata/engine/steps.yaml").Points[0]
	rec := runOK(t, b, p)
	kinds := map[results.GateKind]int{}
	for _, g := range rec.Gates {
		kinds[g.Kind]++
	}
	// Every written check has its tolerance check; the oracle's checks at
	// the capacity and the timed length (rows tiled) add tolerance gates
	// with no written one of their own.
	if kinds["written"] == 0 || kinds["tolerance"] < kinds["written"] || kinds["replay"] == 0 {
		t.Errorf("gates %v", kinds)
	}
	if len(rec.Resources) != 3 || rec.Resources[0].Kernel != "stats<32>" {
		t.Errorf("resources %+v", rec.Resources)
	}
	flags := strings.Join(rec.Compile.Flags, " ")
	if strings.Count(flags, "-lineinfo") != 1 || strings.Count(flags, "--std=c++17") != 1 || !strings.Contains(flags, "-DSTEPS_TEST=1") {
		t.Errorf("compile flags %q: each once, the variant's included", flags)
	}
}

// engineSpec is experiments/engine.yaml without its PTX variant (nvcc is
// not assumed here), in a copy of the engine's tree.
func engineSpec(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"d2_engine.cuh", "d2_engine.cu"} {
		data, err := os.ReadFile(filepath.Join("../experiments/engine", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "engine"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "engine", f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile("../experiments/engine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	text = text[:strings.Index(text, "  - name: engine-ptx")] + extra + "probes: [cold, hot, graph]\n"
	text = strings.Replace(text, "landed: engine-ptx\n", "", 1)
	path := filepath.Join(dir, "engine.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGPUEngineD2 compiles the engine-form D2 with NVRTC through its
// declared signature and runs it next to the built-in d2 at the anchor.
func TestGPUEngineD2(t *testing.T) {
	b := gpuBackend(t)
	pl := loadPlan(t, b, engineSpec(t, ""))
	for _, p := range pl.Points {
		if p.Config.NKV == 1641 {
			continue
		}
		runOK(t, b, p)
	}
}

// TestGPUEngineCUBIN loads the engine kernel as a prebuilt artifact: a
// CUBIN NVRTC makes here stands in for the engine's build, named by its
// mangled symbols as a shipped file would be.
func TestGPUEngineCUBIN(t *testing.T) {
	b := gpuBackend(t)
	src, err := os.ReadFile("../experiments/engine/d2_engine.cu")
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := os.ReadFile("../experiments/engine/d2_engine.cuh")
	if err != nil {
		t.Fatal(err)
	}
	nv, err := cuda.OpenNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	exprs := []string{"gqa_attn_split_partial<__half, 4>", "gqa_attn_split_combine"}
	cubin, log, lowered, err := nv.CompileNamed(string(src), "d2_engine.cu", map[string]string{"d2_engine.cuh": string(hdr)},
		[]string{"-arch=" + b.arch, "--std=c++17", "-DATTN_SPLITS=32", "-I/usr/local/cuda/include"}, exprs)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	path := engineSpec(t, `  - name: engine-cubin
    kernel: engine/d2_engine.cubin
    launches:
      - entry: `+lowered[exprs[0]]+`
        grid: [SPLITS, heads, batch]
        block: [32]
        args: [q, k, v, positions, partial, heads, kv_heads, head_dim, capacity, kv_row_stride, pstr, scale]
      - entry: `+lowered[exprs[1]]+`
        grid: [heads, batch]
        block: [head_dim]
        args: [partial, out, heads, head_dim, pstr]
`)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "engine/d2_engine.cubin"), cubin, 0o644); err != nil {
		t.Fatal(err)
	}
	pl := loadPlan(t, b, path)
	i := slices.IndexFunc(pl.Points, func(p *plan.Point) bool { return p.Config.Variant == "engine-cubin" && p.Config.NKV == 8192 })
	rec := runOK(t, b, pl.Points[i])
	if !strings.HasPrefix(rec.Compile.Artifact, "cubin sha256:") {
		t.Errorf("record's artifact %q", rec.Compile.Artifact)
	}
}
