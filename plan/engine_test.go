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

// engineTree writes an engine's kernel in a tree of its own beside a spec
// and returns the spec's path.
func engineTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "spec.yaml")
}

const engineYAML = `name: e
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [32]}
variants:
  - name: eng
    kernel: eng/src/k.cu
    include: [eng/include]
    flags: [-DATTN_SPLITS=SPLITS, --std=c++20]
    launches:
      - {entry: "part<__half, 4>", grid: [SPLITS, heads, batch], block: [32], args: [q, k, v, positions, partial, heads, pstr, scale]}
      - {entry: comb, grid: [heads, batch], block: [head_dim], args: [partial, out, heads]}
      - {entry: "part<__half, 4>", grid: [1], block: [32], args: [out]}
  - name: shipped
    kernel: eng/k.ptx
`

var engineFiles = map[string]string{
	"eng/src/k.cu":             "#include \"k.cuh\"\n#include <cuda_fp16.h>\n",
	"eng/include/k.cuh":        "#include \"sub/load.cuh\"\n#include \"abi.cuh\"\n",
	"eng/include/sub/load.cuh": "// loader\n",
	"eng/k.ptx":                ".version 8.0\n",
	"spec.yaml":                engineYAML,
}

func buildEngine(t *testing.T, files map[string]string) *Plan {
	t.Helper()
	s, err := spec.Load(engineTree(t, files), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEnginePlan(t *testing.T) {
	p := buildEngine(t, engineFiles)
	eng, shipped := p.Points[0], p.Points[1]
	src := eng.Source
	// Headers: the engine's, found through its include directory and the
	// including header's own directory, and ktune's abi.cuh by name; the
	// toolkit's <cuda_fp16.h> is left to NVRTC.
	var names []string
	for n := range src.Headers {
		names = append(names, n)
	}
	// Each is keyed by its file's path from the kernel's directory, and
	// the #include lines NVRTC reads name that key.
	if len(src.Headers) != 3 || src.Headers["../include/k.cuh"] != "#include \"../include/sub/load.cuh\"\n#include \"abi.cuh\"\n" ||
		src.Headers["../include/sub/load.cuh"] != "// loader\n" || src.Headers["abi.cuh"] == "" {
		t.Errorf("headers %v: %q", names, src.Headers)
	}
	if src.Text != "#include \"../include/k.cuh\"\n#include <cuda_fp16.h>\n" {
		t.Errorf("the kernel's text as NVRTC reads it: %q", src.Text)
	}
	if !src.Named || !reflect.DeepEqual(src.NameExprs, []string{"part<__half, 4>", "comb"}) || !reflect.DeepEqual(src.Entries, src.NameExprs) {
		t.Errorf("named %v exprs %q entries %q", src.Named, src.NameExprs, src.Entries)
	}
	// The plan is the flags' one home; a variant's own standard replaces
	// ktune's.
	if want := []string{"-lineinfo", "-DATTN_SPLITS=SPLITS", "--std=c++20"}; !reflect.DeepEqual(eng.Flags, want) {
		t.Errorf("flags %q, want %q", eng.Flags, want)
	}
	if len(eng.Launches) != 3 || eng.Launches[0].Grid != [3]int{32, 28, 1} || eng.Launches[1].Block != [3]int{128, 1, 1} ||
		eng.Config.CombineGrid != [3]int{28, 1, 1} || eng.IO != abi.ABIIO {
		t.Errorf("launches %+v, io %+v", eng.Launches, eng.IO)
	}
	// The prebuilt PTX: its bytes and digest, the ABI's entries, no NVRTC.
	if shipped.Source.ArtifactKind != "ptx" || string(shipped.Source.Artifact) != ".version 8.0\n" || shipped.Source.Text != "" ||
		shipped.Source.ArtifactSHA256 != sha256Hex([]byte(".version 8.0\n")) || shipped.Source.Named {
		t.Errorf("artifact source %+v", shipped.Source)
	}
	if !reflect.DeepEqual(shipped.Source.Entries, []string{"attn_partial", "attn_combine"}) || len(shipped.Launches) != 2 {
		t.Errorf("artifact entries %q launches %d", shipped.Source.Entries, len(shipped.Launches))
	}
}

// TestEngineHash: every fact that changes a result moves the hash — a
// header of the include directory, the signature, the artifact's bytes —
// and nothing else does.
func TestEngineHash(t *testing.T) {
	base := buildEngine(t, engineFiles)
	with := func(name, text string) *Plan {
		files := map[string]string{}
		for k, v := range engineFiles {
			files[k] = v
		}
		files[name] = text
		return buildEngine(t, files)
	}
	same := buildEngine(t, engineFiles)
	if same.Points[0].Hash != base.Points[0].Hash || same.Points[1].Hash != base.Points[1].Hash {
		t.Error("the same tree hashes differently")
	}
	if p := with("eng/include/sub/load.cuh", "// loader v2\n"); p.Points[0].Hash == base.Points[0].Hash {
		t.Error("editing a nested header of the include directory kept the hash")
	}
	if p := with("eng/k.ptx", ".version 8.1\n"); p.Points[1].Hash == base.Points[1].Hash || p.Points[0].Hash != base.Points[0].Hash {
		t.Error("the artifact's bytes do not move its hash alone")
	}
	if p := with("spec.yaml", strings.Replace(engineYAML, "heads, pstr, scale", "heads, pstr, scale, \"i32:1\"", 1)); p.Points[0].Hash == base.Points[0].Hash {
		t.Error("an added argument kept the hash")
	}
}

// TestEngineSpec plans experiments/engine.yaml, with a stand-in for the
// PTX that run-engine.sh builds on the GPU machine.
func TestEngineSpec(t *testing.T) {
	dir := t.TempDir()
	copyFile := func(src, dst string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("../experiments/engine.yaml", filepath.Join(dir, "engine.yaml"))
	copyFile("../experiments/engine/d2_engine.cuh", filepath.Join(dir, "engine/d2_engine.cuh"))
	copyFile("../experiments/engine/d2_engine.cu", filepath.Join(dir, "engine/d2_engine.cu"))
	if err := os.MkdirAll(filepath.Join(dir, "engine/build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "engine/build/d2_engine.ptx"), []byte("// PTX\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(filepath.Join(dir, "engine.yaml"), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 9 {
		t.Fatalf("%d points, want 9", len(p.Points))
	}
	var landed int
	for _, pt := range p.Points {
		if pt.Landed {
			landed++
			if pt.Config.Variant != "engine-ptx" || pt.Source.ArtifactKind != "ptx" {
				t.Errorf("landed point %s (%s)", pt.Config.Variant, pt.Source.ArtifactKind)
			}
		}
		if pt.Config.Variant == "engine" {
			if pt.Source.Headers["d2_engine.cuh"] == "" || !pt.Source.Named || pt.Launches[0].Grid != [3]int{32, 28, 1} {
				t.Errorf("engine point: headers %d named %v launches %+v", len(pt.Source.Headers), pt.Source.Named, pt.Launches)
			}
		}
	}
	if landed != 3 {
		t.Errorf("%d landed points, want engine-ptx at 3 lengths", landed)
	}
}

// TestMissingArtifact: a prebuilt kernel is a build output; before it is
// built the plan has its points, warns, and hashes them as missing.
func TestMissingArtifact(t *testing.T) {
	files := map[string]string{}
	for k, v := range engineFiles {
		if k != "eng/k.ptx" {
			files[k] = v
		}
	}
	p := buildEngine(t, files)
	shipped := p.Points[1]
	if shipped.Source.Missing == "" || shipped.Source.Artifact != nil || shipped.Source.ArtifactKind != "ptx" {
		t.Errorf("missing artifact source %+v", shipped.Source)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "does not exist yet") {
		t.Errorf("warnings %q", p.Warnings)
	}
	if built := buildEngine(t, engineFiles); built.Points[1].Hash == shipped.Hash {
		t.Error("building the artifact kept the hash")
	}
}

// A header is the file an #include resolves to: one file reached under
// two spellings is one header, and two files with one spelling (a util.h
// beside each of two headers) are two, each #include naming its own.
func TestHeadersByPath(t *testing.T) {
	files := map[string]string{
		"eng/src/k.cu":         "#include \"a/x.cuh\"\n#include \"b/x.cuh\"\n#include <a/x.cuh>\n#include \"../src/a/x.cuh\"\n",
		"eng/src/a/x.cuh":      "#include \"util.h\"\n",
		"eng/src/b/x.cuh":      "#include \"util.h\"\n",
		"eng/src/a/util.h":     "// a's util\n",
		"eng/src/b/util.h":     "// b's util\n",
		"eng/include/a/x.cuh":  "// shadowed: a quoted include finds the including file's directory first\n",
		"eng/include/a/y.cuh":  "",
		"spec.yaml":            strings.Replace(engineYAML, "launches:", "std_headers: false\n    launches:", 1),
		"eng/k.ptx":            ".version 8.0\n",
		"eng/include/sub/l.cu": "",
	}
	p := buildEngine(t, files)
	src := p.Points[0].Source
	want := map[string]string{
		"a/x.cuh":  "#include \"a/util.h\"\n",
		"b/x.cuh":  "#include \"b/util.h\"\n",
		"a/util.h": "// a's util\n",
		"b/util.h": "// b's util\n",
		// <a/x.cuh> is looked up in the include directories only.
		"../include/a/x.cuh": "// shadowed: a quoted include finds the including file's directory first\n",
	}
	if !reflect.DeepEqual(src.Headers, want) {
		t.Errorf("headers %q\nwant    %q", src.Headers, want)
	}
	if wantText := "#include \"a/x.cuh\"\n#include \"b/x.cuh\"\n#include \"../include/a/x.cuh\"\n#include \"a/x.cuh\"\n"; src.Text != wantText {
		t.Errorf("text %q\nwant %q", src.Text, wantText)
	}
}
