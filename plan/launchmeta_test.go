package plan

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// twoFileYAML is a step of two launches from two prebuilt files: the
// partial from a CUBIN with Triton metadata, the combine from a PTX.
const twoFileYAML = `name: two
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: tt
    kernel: build/partial.cubin
    launches:
      - {entry: ktune_tt_partial, triton: build/partial.json, grid: [SPLITS, heads, batch], args: [q, k, v, positions, partial, capacity, scale]}
      - {entry: comb, kernel: build/comb.ptx, grid: [heads, batch], block: [head_dim], args: [partial, out]}
`

func twoFiles(t *testing.T) map[string]string {
	t.Helper()
	meta, err := os.ReadFile("testdata/triton/decode_partial.json")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"spec.yaml":           twoFileYAML,
		"build/partial.cubin": "\x7fELF partial",
		"build/partial.json":  string(meta),
		"build/comb.ptx":      ".version 8.0\n.entry comb\n",
	}
}

func TestTwoFileStep(t *testing.T) {
	files := twoFiles(t)
	p := buildEngine(t, files)
	pt := p.Points[0]
	src := pt.Source
	if !reflect.DeepEqual(src.Entries, []string{"ktune_tt_partial"}) || string(src.Artifact) != files["build/partial.cubin"] {
		t.Errorf("variant's kernel: entries %v, image %q; want the partial alone from partial.cubin", src.Entries, src.Artifact)
	}
	if len(src.Modules) != 1 {
		t.Fatalf("modules %+v, want the combine's PTX", src.Modules)
	}
	m := src.Modules[0]
	if m.Kind != spec.ArtifactPTX || !reflect.DeepEqual(m.Entries, []string{"comb"}) || string(m.Image) != files["build/comb.ptx"] || m.SHA256 != sha256Hex(m.Image) {
		t.Errorf("module %+v, want comb from comb.ptx with its digest", m)
	}
	// Each file's bytes are hashed: a changed byte in either changes the
	// point's hash.
	for _, f := range []string{"build/partial.cubin", "build/comb.ptx", "build/partial.json"} {
		edited := twoFiles(t)
		edited[f] += " "
		if h := buildEngine(t, edited).Points[0].Hash; h == pt.Hash {
			t.Errorf("editing %s left the hash %s", f, h)
		}
	}
}

func TestTritonMetadataLaunch(t *testing.T) {
	p := buildEngine(t, twoFiles(t))
	l := p.Points[0].Launches[0]
	// decode_partial.json: num_warps 4, shared 8704, both scratch keys.
	if l.Block != [3]int{128, 1, 1} || l.Shared != 8704 {
		t.Errorf("block %v shared %d, want [128 1 1] and 8704 from the metadata", l.Block, l.Shared)
	}
	if c := p.Points[0].Config; c.Block != l.Block || c.SharedBytes != 8704 {
		t.Errorf("record's geometry %v/%d, want the metadata's", c.Block, c.SharedBytes)
	}
	null := abi.Arg{Type: abi.ArgU64, Value: "0"}
	want := append(args("q", "k", "v", "positions", "partial", "capacity", "scale"), null, null)
	if !reflect.DeepEqual(l.Args, want) {
		t.Errorf("args %v, want the declared ones and two null scratch pointers", l.Args)
	}
	if !strings.Contains(signatureText(p.Points[0]), "scale u64:0 u64:0\n") {
		t.Errorf("the hashed signature does not name the scratch pointers:\n%s", signatureText(p.Points[0]))
	}
}

func TestTritonMetadataVersions(t *testing.T) {
	data, err := os.ReadFile("testdata/triton/decode_combine_v31.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseTritonMeta(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "ktune_tt_combine" || m.NumWarps != 2 || m.Shared != 0 || len(m.ScratchArgs()) != 0 {
		t.Errorf("%+v (%d scratch args): want ktune_tt_combine, 2 warps, no shared, no scratch pointers", m, len(m.ScratchArgs()))
	}
	one := `{"name": "k", "num_warps": 8, "shared": 0, "global_scratch_size": 0, "global_scratch_align": 1}`
	if m, err := ParseTritonMeta([]byte(one)); err != nil || len(m.ScratchArgs()) != 1 {
		t.Errorf("global scratch only: %v, %v; want one trailing pointer", m, err)
	}
	for _, bad := range []struct{ json, says string }{
		{`{"name": "k", "num_warps": 4, "shared": 0, "global_scratch_size": 256}`, "global_scratch_size 256"},
		{`{"name": "k", "num_warps": 4, "shared": 0, "profile_scratch_size": 64}`, "profile_scratch_size 64"},
		{`{"name": "k", "num_warps": 0, "shared": 0}`, "num_warps 0"},
		{`{"num_warps": 4, "shared": 0}`, "without a name"},
		{`{"name": "k", "num_warps": 4, "num_ctas": 2}`, "num_ctas 2"},
	} {
		if _, err := ParseTritonMeta([]byte(bad.json)); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%s: %v, want an error saying %q", bad.json, err, bad.says)
		}
	}
}

func TestTritonMetadataRefused(t *testing.T) {
	files := twoFiles(t)
	files["spec.yaml"] = strings.Replace(twoFileYAML, "entry: ktune_tt_partial", "entry: other", 1)
	s, err := spec.Load(engineTree(t, files), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(s, "sm_90"); err == nil || !strings.Contains(err.Error(), "entry other, but the Triton metadata") {
		t.Errorf("entry unlike the metadata's name: %v", err)
	}
}

// A build output not made yet plans with a warning, and its points are
// Missing (the probe fails them); building it changes the hash.
func TestLaunchFilesMissing(t *testing.T) {
	for _, f := range []string{"build/partial.json", "build/comb.ptx"} {
		files := twoFiles(t)
		delete(files, f)
		path := engineTree(t, files)
		s, err := spec.Load(path, variants.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		p, err := Build(s, "sm_90")
		if err != nil {
			t.Fatal(err)
		}
		full := filepath.Join(filepath.Dir(path), f)
		if !strings.Contains(strings.Join(p.Warnings, "\n"), "launch file "+full+" does not exist yet") {
			t.Errorf("%s missing: warnings %q", f, p.Warnings)
		}
		src := p.Points[0].Source
		if missing := src.Missing == full || (len(src.Modules) == 1 && src.Modules[0].Missing); !missing {
			t.Errorf("%s missing: the point's source does not say so: %+v", f, src)
		}
	}
}

func TestLaunchFileSpecErrors(t *testing.T) {
	cases := []struct{ from, to, says string }{
		{"kernel: build/comb.ptx", "kernel: build/comb.cu", "is not a prebuilt .ptx, .cubin or .fatbin"},
		{"triton: build/partial.json, grid", "triton: build/partial.json, block: [32], grid", "takes its block from the metadata"},
		{"triton: build/partial.json, grid", "triton: build/partial.json, shared: 0, grid", "takes its shared from the metadata"},
		{"triton: build/partial.json,", "triton: build/partial.yaml,", "is not a .json"},
		{"{entry: ktune_tt_partial,", "{entry: ktune_tt_partial, kernel: build/p2.cubin,", "the variant's kernel serves none"},
	}
	for _, c := range cases {
		files := twoFiles(t)
		files["spec.yaml"] = strings.Replace(twoFileYAML, c.from, c.to, 1)
		_, err := spec.Load(engineTree(t, files), variants.Builtins())
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.to, err, c.says)
		}
	}
}

func TestSharedSymbolLaunch(t *testing.T) {
	files := twoFiles(t)
	sym := strings.Replace(twoFileYAML, "block: [head_dim], args: [partial, out]}", "block: [head_dim], shared_symbol: comb_smem, args: [partial, out]}", 1)
	files["spec.yaml"] = sym
	p := buildEngine(t, files)
	l := p.Points[0].Launches[1]
	if l.SharedSymbol != "comb_smem" || l.Shared != 0 {
		t.Errorf("launch %+v: want shared from comb_smem, 0 in the plan", l)
	}
	if p.Points[0].Hash == buildEngine(t, twoFiles(t)).Points[0].Hash {
		t.Error("the shared symbol is not hashed")
	}
	for _, c := range []struct{ to, says string }{
		{"shared_symbol: comb_smem, shared: 64,", "takes its shared memory from shared_symbol comb_smem"},
		{"shared_symbol: \"comb smem\",", "is not a symbol name"},
	} {
		files["spec.yaml"] = strings.Replace(sym, "shared_symbol: comb_smem,", c.to, 1)
		if _, err := spec.Load(engineTree(t, files), variants.Builtins()); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.to, err, c.says)
		}
	}
}
