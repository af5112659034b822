package plan

import (
	"maps"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

const persistentYAML = `name: persistent
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.ptx
    launches:
      - {entry: part, grid: ["sms * blocks_per_sm"], block: [128], args: [q, k, v, positions, partial, heads]}
      - {entry: comb, grid: [heads, batch], block: [head_dim], args: [partial, out, heads]}
`

// persistentPlan plans yaml beside a PTX image k.ptx.
func persistentPlan(t *testing.T, yaml, arch string, over Override) (*Plan, error) {
	t.Helper()
	return planBeside(t, yaml, "k.ptx", ".version 8.0\n", arch, over)
}

// planBeside plans the spec yaml at arch with over, in a tree that also
// holds the kernel file name with text.
func planBeside(t *testing.T, yaml, name, text, arch string, over Override) (*Plan, error) {
	t.Helper()
	s, err := spec.Load(engineTree(t, map[string]string{"spec.yaml": yaml, name: text}), variants.Builtins())
	if err != nil {
		return nil, err
	}
	return BuildWith(s, arch, over)
}

func TestDeviceSymbols(t *testing.T) {
	p, err := persistentPlan(t, persistentYAML, "sm_90", Override{})
	if err != nil {
		t.Fatal(err)
	}
	l := p.Points[0].Launches[0]
	if l.Grid != [3]int{132, 1, 1} || l.SMs != 132 || l.BlocksPerSM != DefaultBlocksPerSM {
		t.Errorf("sm_90 by default: grid %v, assumed sms %d blocks_per_sm %d; want 132 × 1", l.Grid, l.SMs, l.BlocksPerSM)
	}
	if c := p.Points[0].Launches[1]; c.SMs != 0 || c.BlocksPerSM != 0 {
		t.Errorf("the combine reads no device symbol, but records %d/%d", c.SMs, c.BlocksPerSM)
	}
	q, err := persistentPlan(t, persistentYAML, "sm_90", Override{SMs: 100, BlocksPerSM: 3})
	if err != nil {
		t.Fatal(err)
	}
	if l := q.Points[0].Launches[0]; l.Grid != [3]int{300, 1, 1} || l.SMs != 100 || l.BlocksPerSM != 3 {
		t.Errorf("--sms 100 --blocks-per-sm 3: grid %v, assumed %d/%d", l.Grid, l.SMs, l.BlocksPerSM)
	}
	if q.Points[0].Hash == p.Points[0].Hash {
		t.Error("the assumed device symbols are not hashed")
	}
	// Same grid, other assumptions: still another hash, since the probe
	// checks the assumption.
	r, err := persistentPlan(t, persistentYAML, "sm_90", Override{SMs: 66, BlocksPerSM: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Points[0].Launches[0].Grid != [3]int{132, 1, 1} || r.Points[0].Hash == p.Points[0].Hash {
		t.Errorf("66 × 2: grid %v, hash %s (default plan's %s)", r.Points[0].Launches[0].Grid, r.Points[0].Hash, p.Points[0].Hash)
	}
	if _, err := persistentPlan(t, persistentYAML, "sm_75", Override{}); err == nil || !strings.Contains(err.Error(), "no default SM count for arch \"sm_75\"") {
		t.Errorf("an arch without a default SM count: %v", err)
	}
	if _, err := persistentPlan(t, persistentYAML, "sm_75", Override{SMs: 40}); err != nil {
		t.Errorf("an arch without a default, with --sms: %v", err)
	}
	bad := strings.Replace(persistentYAML, "block: [128]", "block: [blocks_per_sm]", 1)
	if _, err := persistentPlan(t, bad, "sm_90", Override{}); err == nil || !strings.Contains(err.Error(), `unknown symbol "blocks_per_sm"`) {
		t.Errorf("a block that reads the occupancy: %v", err)
	}
}

// padYAML is a host planner that pads its work to 8 blocks per SM × SMs,
// as FlashInfer's decode plan under CUDA graphs does; PLACE is one more
// expression's place, for TestPointSMsEachPlace.
const padYAML = `name: pad
shapes: [{name: s, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: f16, batch: 2, capacity: 4096}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.cu
    planned:
      indptr: {prefix: "cdiv(nkv, cdiv(max_nkv, 8 * sms / kv_heads / batch))"}
      tiles: {expand: "cdiv(nkv, cdiv(max_nkv, 8 * sms / kv_heads / batch))", value: j, length: "8 * sms / kv_heads"}
    scratch:
      tmp: {bytes: "8 * sms / kv_heads * heads * head_dim * 2"}
    structs:
      params:
        fields:
          - {name: padded_batch_size, arg: "u32:8 * sms / kv_heads"}
    launches:
      - {entry: k, grid: [SPLITS, kv_heads], block: [32], args: [out, "planned:indptr", "planned:tiles", "scratch:tmp", {struct: params}]}
`

func padPlan(t *testing.T, yaml, arch string, over Override) (*Plan, error) {
	t.Helper()
	return planBeside(t, yaml, "k.cu", "// k\n", arch, over)
}

// A point whose planned arrays, scratch and arguments read sms evaluates
// them at the plan's assumption (the architecture's default, or --sms),
// records it once and hashes it; its grid reads no device symbol, so no
// launch records one.
func TestPointSMs(t *testing.T) {
	for _, c := range []struct {
		arch string
		over Override
		sms  int
	}{{"sm_90", Override{}, 132}, {"sm_90", Override{SMs: 114}, 114}, {"sm_100", Override{}, 148}, {"sm_75", Override{SMs: 40}, 40}} {
		p, err := padPlan(t, padYAML, c.arch, c.over)
		if err != nil {
			t.Fatalf("%s %+v: %v", c.arch, c.over, err)
		}
		pt := p.Points[0]
		items := 8 * c.sms / 8
		if pt.SMs != c.sms || pt.Dims().SMs != c.sms {
			t.Errorf("%s %+v: the point assumed %d SMs (its dims %d), want %d", c.arch, c.over, pt.SMs, pt.Dims().SMs, c.sms)
		}
		if len(pt.PlannedBufs) != 2 || pt.PlannedBufs[0].Entries != 3 || pt.PlannedBufs[1].Entries != items {
			t.Errorf("%s %+v: planned %+v; want indptr 3 and tiles %d", c.arch, c.over, pt.PlannedBufs, items)
		}
		if len(pt.Scratch) != 1 || pt.Scratch[0].Bytes != int64(items*32*128*2) {
			t.Errorf("%s %+v: scratch %+v; want %d bytes", c.arch, c.over, pt.Scratch, items*32*128*2)
		}
		if l := pt.Launches[0]; l.SMs != 0 || l.BlocksPerSM != 0 {
			t.Errorf("%s %+v: a grid that reads no device symbol records %d/%d", c.arch, c.over, l.SMs, l.BlocksPerSM)
		}
	}
	a, err := padPlan(t, padYAML, "sm_90", Override{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := padPlan(t, padYAML, "sm_90", Override{SMs: 132})
	if err != nil {
		t.Fatal(err)
	}
	c, err := padPlan(t, padYAML, "sm_90", Override{SMs: 114})
	if err != nil {
		t.Fatal(err)
	}
	if a.Points[0].Hash != b.Points[0].Hash || a.Points[0].Hash == c.Points[0].Hash {
		t.Errorf("hashes: default %s, --sms 132 %s, --sms 114 %s; want the first two equal, the third another", a.Points[0].Hash, b.Points[0].Hash, c.Points[0].Hash)
	}
	// The SM count alone, the entries as they are: still another hash,
	// since the probe checks it.
	pt := *a.Points[0]
	pt.SMs = 114
	bd := &builder{arch: "sm_90"}
	if _, h := bd.keys(&pt); h == a.Points[0].Hash {
		t.Error("the point's SM count is not hashed")
	}
	if _, err := padPlan(t, padYAML, "sm_75", Override{}); err == nil || !strings.Contains(err.Error(), `reads sms, and there is no default SM count for arch "sm_75"`) {
		t.Errorf("an arch without a default SM count: %v", err)
	}
}

// Each place that may read sms besides a grid makes the point assume it:
// a planned array's count, value and length, a scratch size, a launch's
// shared size, an argument, a struct's field, a vector's component and a
// tensor map's entry. A point
// that reads it nowhere assumes nothing, and --sms leaves its hash as it
// was.
func TestPointSMsEachPlace(t *testing.T) {
	const base = `name: one
shapes: [{name: s, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: f16, batch: 2, capacity: 4096}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.cu
    planned:
      tiles: {expand: COUNT, value: VALUE, length: LENGTH}
    scratch:
      tmp: {bytes: BYTES}
    structs:
      params:
        fields:
          - {name: n, arg: FIELD}
    launches:
      - {entry: k, grid: [SPLITS], block: [32], shared: SHARED, args: [out, "planned:tiles", "scratch:tmp", {struct: params}, ARG, {uint2: [COMP, 1]}, {tensor_map: {buffer: k, dtype: kv, dims: [head_dim, kv_heads, "capacity * batch"], box: [head_dim, 1, BOX]}}]}
`
	plain := map[string]string{"COUNT": "1", "VALUE": "j", "LENGTH": "batch", "BYTES": "256", "FIELD": `"u32:4"`, "ARG": `"i32:heads"`, "COMP": "heads", "BOX": "64", "SHARED": "0"}
	reading := map[string]string{"COUNT": `"min(sms, 1)"`, "VALUE": `"j + sms - sms"`, "LENGTH": `"batch + sms - sms"`, "BYTES": `"sms * 4"`,
		"FIELD": `"u32:sms"`, "ARG": `"i32:sms"`, "COMP": "sms", "BOX": `"sms / 2"`, "SHARED": `"sms * 8"`}
	build := func(sub map[string]string, over Override) *Point {
		t.Helper()
		var pairs []string
		for k, v := range sub {
			pairs = append(pairs, k, v)
		}
		p, err := padPlan(t, strings.NewReplacer(pairs...).Replace(base), "sm_90", over)
		if err != nil {
			t.Fatal(err)
		}
		return p.Points[0]
	}
	none := build(plain, Override{})
	if none.SMs != 0 || build(plain, Override{SMs: 114}).Hash != none.Hash {
		t.Errorf("a point that reads no sms assumed %d SMs, or --sms changed its hash", none.SMs)
	}
	for place, src := range reading {
		sub := maps.Clone(plain)
		sub[place] = src
		if pt := build(sub, Override{}); pt.SMs != 132 {
			t.Errorf("%s = %s: the point assumed %d SMs, want sm_90's 132", place, src, pt.SMs)
		}
	}
}

// A launch that declares blocks_per_sm (the engine's fact) has its grid's
// blocks_per_sm evaluated at it, over --blocks-per-sm, and records it; the
// point hashes as the same point planned with --blocks-per-sm at that
// value, whose launches are the same. A launch that declares nothing
// takes the flag's.
func TestDeclaredBlocksPerSM(t *testing.T) {
	declared := strings.Replace(persistentYAML, "block: [128],", "block: [128], blocks_per_sm: 12,", 1)
	flagged, err := persistentPlan(t, persistentYAML, "sm_90", Override{BlocksPerSM: 12})
	if err != nil {
		t.Fatal(err)
	}
	for _, over := range []Override{{}, {BlocksPerSM: 3}, {BlocksPerSM: 12}} {
		p, err := persistentPlan(t, declared, "sm_90", over)
		if err != nil {
			t.Fatal(err)
		}
		l := p.Points[0].Launches[0]
		if l.Grid != [3]int{132 * 12, 1, 1} || l.BlocksPerSM != 12 || !l.BlocksPerSMDeclared {
			t.Errorf("declared 12, --blocks-per-sm %d: grid %v, blocks_per_sm %d (declared %v); want 1584, 12, declared",
				over.BlocksPerSM, l.Grid, l.BlocksPerSM, l.BlocksPerSMDeclared)
		}
		f := flagged.Points[0]
		if fl := f.Launches[0]; fl.BlocksPerSMDeclared || fl.Grid != l.Grid || fl.BlocksPerSM != l.BlocksPerSM {
			t.Errorf("--blocks-per-sm 12 without a declaration: %+v", fl)
		}
		if p.Points[0].Hash != f.Hash || p.Points[0].GateKey != f.GateKey {
			t.Errorf("declared 12, --blocks-per-sm %d: hash %s, gate key %s; --blocks-per-sm 12 gave %s, %s",
				over.BlocksPerSM, p.Points[0].Hash, p.Points[0].GateKey, f.Hash, f.GateKey)
		}
	}
	// Declared on a launch whose grid does not read it: recorded all the
	// same, for the probe to check, and hashed; the other launch takes
	// the flag's.
	comb := strings.Replace(persistentYAML, "block: [head_dim],", "block: [head_dim], blocks_per_sm: 8,", 1)
	p, err := persistentPlan(t, comb, "sm_90", Override{BlocksPerSM: 3})
	if err != nil {
		t.Fatal(err)
	}
	part, c := p.Points[0].Launches[0], p.Points[0].Launches[1]
	if part.Grid != [3]int{396, 1, 1} || part.BlocksPerSM != 3 || part.BlocksPerSMDeclared {
		t.Errorf("the undeclared launch under --blocks-per-sm 3: %+v", part)
	}
	if c.Grid != [3]int{28, 1, 1} || c.BlocksPerSM != 8 || !c.BlocksPerSMDeclared {
		t.Errorf("the launch that declares 8 and reads nothing: %+v", c)
	}
	plain, err := persistentPlan(t, persistentYAML, "sm_90", Override{BlocksPerSM: 3})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Points[0].Hash == p.Points[0].Hash {
		t.Error("a declaration the grid does not read is not hashed, though the probe checks it")
	}
}

// Two launches of one step, each declaring its own blocks per SM, whose
// grids read blocks_per_sm and nkv (graph: never): each is evaluated at
// its own, at the point's length and at every gate length.
func TestDeclaredBlocksPerSMEachLaunch(t *testing.T) {
	const two = `name: two
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.ptx
    graph: never
    launches:
      - {entry: part, grid: ["sms * min(blocks_per_sm, cdiv(nkv, 64))"], block: [128], blocks_per_sm: 8, args: [q, k, v, positions, partial, heads]}
      - {entry: comb, grid: ["sms * min(blocks_per_sm, cdiv(nkv, 32))"], block: [head_dim], blocks_per_sm: 12, args: [partial, out, heads]}
`
	p, err := persistentPlan(t, two, "sm_90", Override{BlocksPerSM: 2})
	if err != nil {
		t.Fatal(err)
	}
	pt := p.Points[0]
	if pt.Launches[0].Grid != [3]int{132 * 8, 1, 1} || pt.Launches[1].Grid != [3]int{132 * 12, 1, 1} {
		t.Errorf("at nkv 512: grids %v and %v; want 1056 and 1584", pt.Launches[0].Grid, pt.Launches[1].Grid)
	}
	if pt.Geometry == nil || len(pt.Geometry.Steps) != 2 {
		t.Fatalf("the steps do not follow nkv: %+v", pt.Geometry)
	}
	for _, c := range []struct{ nkv, part, comb int }{{64, 132, 264}, {320, 132 * 5, 132 * 10}, {4096, 132 * 8, 132 * 12}} {
		ls, err := pt.Geometry.StepsAt(c.nkv, pt.Launches)
		if err != nil {
			t.Fatal(err)
		}
		if ls[0].Grid[0] != c.part || ls[1].Grid[0] != c.comb {
			t.Errorf("at nkv %d: grids %d and %d; want %d and %d", c.nkv, ls[0].Grid[0], ls[1].Grid[0], c.part, c.comb)
		}
	}
}

// A launch's shared size that reads sms and nkv (llama.cpp's combine: 8
// bytes a parallel block, their count from the SMs and the length) is
// evaluated at the plan's SM count, at the point's length and again at
// each length a gate launches at, though the geometry was made at the
// first launch's grid, which reads no sms.
func TestSharedReadsSMs(t *testing.T) {
	const yaml = `name: shared
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.ptx
    graph: never
    launches:
      - {entry: part, grid: ["cdiv(nkv, 256)"], block: [128], args: [q, k, v, positions, partial, heads]}
      - {entry: comb, grid: [heads, batch], block: [head_dim], shared: "cdiv(nkv, 256) * 8 + sms", args: [partial, out, heads]}
`
	for _, c := range []struct {
		over Override
		sms  int
	}{{Override{}, 132}, {Override{SMs: 114}, 114}} {
		p, err := persistentPlan(t, yaml, "sm_90", c.over)
		if err != nil {
			t.Fatal(err)
		}
		pt := p.Points[0]
		if pt.SMs != c.sms || pt.Launches[1].Shared != 2*8+c.sms {
			t.Errorf("--sms %d: the point assumed %d SMs, comb's shared %d; want %d and %d", c.over.SMs, pt.SMs, pt.Launches[1].Shared, c.sms, 2*8+c.sms)
		}
		for nkv, want := range map[int]int{1: 8 + c.sms, 256: 8 + c.sms, 257: 16 + c.sms, 511: 16 + c.sms} {
			ls, err := pt.Geometry.StepsAt(nkv, pt.Launches)
			if err != nil || ls[1].Shared != want || ls[0].Grid[0] != (nkv+255)/256 {
				t.Errorf("--sms %d, nkv %d: %v, comb's shared %d (want %d), part's grid %v", c.over.SMs, nkv, err, ls[1].Shared, want, ls[0].Grid)
			}
		}
	}
	if _, err := persistentPlan(t, yaml, "sm_75", Override{}); err == nil || !strings.Contains(err.Error(), `reads sms, and there is no default SM count for arch "sm_75"`) {
		t.Errorf("an arch without a default SM count: %v", err)
	}
}
