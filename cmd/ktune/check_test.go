package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ktune/ktune/internal/cuda"
)

// needNVRTC skips a test that compiles when this machine has no NVRTC.
func needNVRTC(t *testing.T) {
	t.Helper()
	if _, err := cuda.OpenNVRTC(); err != nil {
		t.Skipf("no NVRTC on this machine, so nothing can be compiled: %v", err)
	}
}

// r4Cache is a check cache that holds r4 built, shared by the tests
// whose specs have r4 beside their own kernels: it is built once per
// test binary, and each test gets a copy of its own (warmR4Cache).
var r4Cache struct {
	once sync.Once
	dir  string
	err  error
}

// warmR4Cache returns a new cache directory that already holds the r4
// build of buildCheckSpec's spec, so that a check test compiles only the
// kernels it is about. A test that asserts what was built into an empty
// cache takes t.TempDir() instead.
func warmR4Cache(t *testing.T) string {
	t.Helper()
	r4Cache.once.Do(func() {
		dir, err := os.MkdirTemp("", "ktune-r4cache-")
		if err != nil {
			r4Cache.err = err
			return
		}
		r4Cache.dir = dir
		if stdout, stderr, code := runCmd("check", buildCheckSpec(t), "--cache", dir); code != exitOK {
			r4Cache.err = fmt.Errorf("building r4 into the shared cache: exit %d\n%s%s", code, stdout, stderr)
		}
	})
	if r4Cache.err != nil {
		t.Fatal(r4Cache.err)
	}
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(r4Cache.dir)); err != nil {
		t.Fatalf("copying the shared r4 cache: %v", err)
	}
	return dst
}

func TestMain(m *testing.M) {
	code := m.Run()
	if r4Cache.dir != "" {
		os.RemoveAll(r4Cache.dir)
	}
	os.Exit(code)
}

// buildCheckSpec writes a one-shape spec whose variants are given as YAML
// flow mappings, with kernel paths made absolute from the repository.
// checkVariantLine is a variant of buildCheckSpec's spec as written
// there: TESTDATA replaced by kernels/testdata's absolute path.
func checkVariantLine(t *testing.T, v string) string {
	t.Helper()
	kernels, err := filepath.Abs("../../kernels/testdata")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(v, "TESTDATA", kernels)
}

func buildCheckSpec(t *testing.T, variants ...string) string {
	t.Helper()
	var vs strings.Builder
	for _, v := range variants {
		fmt.Fprintf(&vs, "  - %s\n", checkVariantLine(t, v))
	}
	path := filepath.Join(t.TempDir(), "check.yaml")
	text := `name: check
landed: r4
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1, capacity: 4096}
axes:
  nkv: [1024, 4096]
  SPLITS: [32]
variants:
  - {name: r4, kernel: r4}
` + vs.String()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Each catalogue kernel gives the documented exit code and says why in
// its verdict; the built-in beside it builds.
// progressLine is check's progress line: [n/N] SOURCE KEY VERDICT (HOW).
var progressLine = regexp.MustCompile(`(?m)^\[(\d+)/(\d+)\] \S+ \S+ (ok|FAILED|[A-Z_]+) \(.+\)$`)

func TestCheckExitCodes(t *testing.T) {
	t.Parallel()
	needNVRTC(t)
	cache := t.TempDir()
	for i, tc := range []struct {
		name    string
		variant string
		code    int
		want    []string
	}{
		{"a kernel that builds", "", exitOK, []string{"ok     r4.cu", "attn_partial: ", " registers, 0 B local", "1 distinct kernels: 1 built"}},
		{"a compile error", "{name: bad, kernel: TESTDATA/badcompile.cu}", exitBuild,
			[]string{"FAILED badcompile.cu", "badcompile.cu(9): error"}},
		{"an entry missing from the image", "{name: noentry, kernel: TESTDATA/noentry.cu}", exitBuild,
			[]string{"FAILED noentry.cu", "the image has no entry attn_partial (it has attn_combine, attn_partal)"}},
		{"a block over __launch_bounds__", "{name: regs-block, kernel: TESTDATA/regs.cu, block: [64]}", exitBuild,
			[]string{"FAILED regs.cu", "a block of 64 threads is over its __launch_bounds__ of 32"}},
		// The parameter check reads the CUBIN's parameters: no GPU.
		{"an ABI kernel without float scale", "{name: noscale, kernel: TESTDATA/noscale.cu}", exitBuild,
			[]string{"FAILED noscale.cu", "check.yaml:10:5: variant noscale, launch 0: attn_partial: the kernel takes 8 parameters, the launch declares 9 (argument 8 (scale) and after have no parameter)"}},
		{"a launch one argument short", "{name: short, kernel: TESTDATA/argcheck.cu, launches: [{entry: step, grid: [heads], block: [32], args: [q, out, heads]}]}", exitBuild,
			[]string{"FAILED argcheck.cu", "check.yaml:10:LAUNCH: variant short, launch 0: step: the kernel takes 4 parameters, the launch declares 3 (missing: the kernel's parameters from 3 on are not passed)"}},
		{"an argument of another size", "{name: wide, kernel: TESTDATA/argcheck.cu, launches: [{entry: step, grid: [heads], block: [32], args: [q, out, \"heads:i64\", scale]}]}", exitBuild,
			[]string{"FAILED argcheck.cu", "step: parameter 2 is 4 bytes at offset 16 in the kernel, but the launch declares heads:i64, 8 bytes at offset 16"}},
		{"C and C++ headers NVRTC lacks, given", "{name: std, kernel: TESTDATA/stdheaders.cu, std_headers: true, launches: [{entry: step, grid: [1], block: [32], args: [q, out, heads]}]}", exitOK,
			[]string{"ok     stdheaders.cu", "step: "}},
		{"C and C++ headers NVRTC lacks, not given", "{name: nostd, kernel: TESTDATA/stdheaders.cu, launches: [{entry: step, grid: [1], block: [32], args: [q, out, heads]}]}", exitBuild,
			[]string{"FAILED stdheaders.cu", `could not open source file "float.h"`}},
		{"fast-division objects in a params struct", `{name: fastdiv, kernel: TESTDATA/fastdiv.cu, defines: {PAGE: [16]}, structs: {ufd: {fields: [{name: d, arg: "u32:PAGE"}, {name: m, arg: "u32:fastdiv_m(PAGE)"}, {name: s, arg: "u32:fastdiv_s(PAGE)"}, {name: a, arg: "u32:fastdiv_a(PAGE)"}]}, fmd: {fields: [{name: divisor, arg: "u32:PAGE"}, {name: multiplier, arg: "u32:fmd_mul(PAGE)"}, {name: add, arg: "u32:fmd_add(PAGE)"}, {name: shift, arg: "i32:fmd_shift(PAGE)"}]}, params: {fields: [{name: out, arg: out}, {name: page, struct: ufd}, {name: chunk, struct: fmd}, {name: n, arg: "i32:capacity"}]}}, launches: [{entry: divide, grid: [1], block: [128], args: [{struct: params}]}]}`, exitOK,
			[]string{"ok     fastdiv.cu", "divide: "}},
		{"a struct laid out as the engine's type", "{name: layout, kernel: TESTDATA/layout.cu, structs: {fd: {fields: [{name: d, arg: \"u32:8\"}, {name: m, arg: \"u32:fastdiv_m(8)\"}, {name: s, arg: \"u32:fastdiv_s(8)\"}, {name: a, arg: \"u32:fastdiv_a(8)\"}]}, params: {type: \"eng::params<float>\", fields: [{name: out, arg: out}, {name: heads, arg: heads}, {name: kv_heads, arg: kv_heads}, {name: head_dim, arg: head_dim}, {name: scale, arg: scale}, {name: d, arg: \"i64:0\"}, {name: page, struct: fd}, {name: n, arg: \"i32:capacity\"}]}}, launches: [{entry: step, grid: [1], block: [32], args: [{struct: params}]}]}", exitOK,
			[]string{"ok     layout.cu", "step: "}},
		// kv_heads and head_dim swapped: both 4-byte ints, so the
		// parameter's size is right and only the layout check sees it.
		{"a struct field at a wrong offset", "{name: swapped, kernel: TESTDATA/layout.cu, structs: {fd: {fields: [{name: d, arg: \"u32:8\"}, {name: m, arg: \"u32:fastdiv_m(8)\"}, {name: s, arg: \"u32:fastdiv_s(8)\"}, {name: a, arg: \"u32:fastdiv_a(8)\"}]}, params: {type: \"eng::params<float>\", fields: [{name: out, arg: out}, {name: heads, arg: heads}, {name: head_dim, arg: head_dim}, {name: kv_heads, arg: kv_heads}, {name: scale, arg: scale}, {name: d, arg: \"i64:0\"}, {name: page, struct: fd}, {name: n, arg: \"i32:capacity\"}]}}, launches: [{entry: step, grid: [1], block: [32], args: [{struct: params}]}]}", exitBuild,
			[]string{"FAILED layout.cu", "struct params (eng::params<float>): field head_dim is declared at offset 12 (4 bytes), but the type has it at offset 16 (4 bytes)",
				"field kv_heads is declared at offset 16 (4 bytes), but the type has it at offset 12 (4 bytes)"}},
		// What a pointer member points at, against what the spec passes:
		// FlashInfer's bool mask fed an int32 planned array reads entry k
		// in byte k (every fourth block valid), and no offset or size
		// shows it.
		{"pointers to elements of the passed size", `{name: planok, kernel: TESTDATA/layout.cu, planned: {valid: {per_seq: "1", type: bool}, indptr: {prefix: nkv}, wide: {per_seq: nkv, type: i64}}, structs: {pp: {type: "eng::plan_params", fields: [{name: valid, arg: "planned:valid"}, {name: indptr, arg: "planned:indptr"}, {name: wide, arg: "planned:wide"}, {name: ws, arg: "planned:indptr"}, {name: out, arg: out}, {name: qv, arg: q}]}}, launches: [{entry: plan_step, grid: [1], block: [32], args: [{struct: pp}]}]}`, exitOK,
			[]string{"ok     layout.cu", "plan_step: "}},
		{"pointers to elements of another size", `{name: planbad, kernel: TESTDATA/layout.cu, planned: {valid: {per_seq: "1"}, indptr: {prefix: nkv}}, structs: {pp: {type: "eng::plan_params", fields: [{name: valid, arg: "planned:valid"}, {name: indptr, arg: "planned:indptr"}, {name: wide, arg: seqlens}, {name: ws, arg: "planned:indptr"}, {name: out, arg: out}, {name: qv, arg: q}]}}, launches: [{entry: plan_step, grid: [1], block: [32], args: [{struct: pp}]}]}`, exitBuild,
			[]string{"FAILED layout.cu", "struct pp (eng::plan_params): field valid points to 1-byte elements, but planned:valid passed there holds 4-byte ones (declare the planned array's entries with type: u8 or bool)",
				"field wide points to 8-byte elements, but seqlens passed there holds 4-byte ones"}},
		{"parameters that point at what is passed", `{name: cxxok, kernel: TESTDATA/layout.cu, planned: {valid: {per_seq: "1", type: bool}, idx: {prefix: nkv}}, launches: [{entry: "eng::masked<float>", grid: [1], block: [32], args: ["planned:valid", "planned:idx", out]}]}`, exitOK,
			[]string{"ok     layout.cu", "eng::masked<float>: "}},
		{"parameters that point at other sizes", `{name: cxxbad, kernel: TESTDATA/layout.cu, planned: {valid: {per_seq: "1"}}, launches: [{entry: "eng::masked<float>", grid: [1], block: [32], args: ["planned:valid", seqlens, out]}], io: {out: f16}}`, exitBuild,
			[]string{"FAILED layout.cu", "eng::masked<float>: parameter 0 (bool const*) points to 1-byte elements, but planned:valid passed there holds 4-byte ones", "eng::masked<float>: parameter 2 (float*) points to 4-byte elements, but out passed there holds 2-byte ones"}},
		{"byte pointers take any buffer", `{name: bytesok, kernel: TESTDATA/layout.cu, planned: {codes: {per_seq: "1", type: u8}}, launches: [{entry: "eng::bytes<128>", grid: [1], block: [32], args: [q, k, out, "planned:codes", "kv_row_bytes:i32"]}]}`, exitOK,
			[]string{"ok     layout.cu", "eng::bytes<128>: "}},
		{"a signed char pointer reads bytes", `{name: bytesbad, kernel: TESTDATA/layout.cu, launches: [{entry: "eng::bytes<128>", grid: [1], block: [32], args: [q, k, out, seqlens, "kv_row_bytes:i32"]}]}`, exitBuild,
			[]string{"FAILED layout.cu", "eng::bytes<128>: parameter 3 (signed char const*) points to 1-byte elements, but seqlens passed there holds 4-byte ones"}},
		{"arguments that match", "{name: match, kernel: TESTDATA/argcheck.cu, launches: [{entry: step, grid: [heads], block: [32], args: [q, out, heads, scale]}]}", exitOK,
			[]string{"ok     argcheck.cu", "step: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first case builds r4 into the empty cache (it says
			// "1 built"); the others find it there and build only their
			// own kernel, side by side (the cache's writes are atomic).
			if i > 0 {
				t.Parallel()
			}
			var vs []string
			if tc.variant != "" {
				vs = append(vs, tc.variant)
			}
			stdout, stderr, code := runCmd("check", buildCheckSpec(t, vs...), "--cache", cache)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				// LAUNCH: the column of the variant's launch, which
				// moves with the length of the kernels' absolute path.
				w = strings.Replace(w, "LAUNCH", fmt.Sprint(len("  - ")+1+strings.Index(checkVariantLine(t, tc.variant), "{entry")), 1)
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
			if !strings.Contains(stdout, "ok     r4.cu") {
				t.Errorf("r4 did not build beside it:\n%s", stdout)
			}
			// Progress on stderr, a line per kernel as it ends, the
			// last one numbered N of N.
			lines := progressLine.FindAllStringSubmatch(stderr, -1)
			n := strconv.Itoa(len(lines))
			if len(lines) == 0 || lines[len(lines)-1][2] != n || lines[len(lines)-1][1] != n {
				t.Errorf("progress lines %q:\n%s", lines, stderr)
			}
			verdict := "ok"
			if tc.code != exitOK {
				verdict = "FAILED"
			}
			if !strings.Contains(stderr, " "+verdict+" (") {
				t.Errorf("no progress line says %s:\n%s", verdict, stderr)
			}
		})
	}
}

// The kernels a spec names but this NVRTC cannot build fail the check
// unless --unchecked-ok lets them through, still listed.
func TestCheckUncheckedOK(t *testing.T) {
	t.Parallel()
	needNVRTC(t)
	nv, _ := cuda.OpenNVRTC()
	if major, _, err := nv.Version(); err != nil || major >= 12 {
		t.Skipf("NVRTC %d compiles for sm_90a: nothing here it cannot check", major)
	}
	spec := buildCheckSpec(t, "{name: a, kernel: r4, flags: [-arch=sm_90a]}")
	cache := t.TempDir()
	stdout, _, code := runCmd("check", spec, "--cache", cache)
	if code != exitBuild || !strings.Contains(stdout, "NEEDS NEWER NVRTC r4.cu") || !strings.Contains(stdout, "sm_90a needs NVRTC 12.0 or newer") {
		t.Errorf("exit %d, want %d and the reason:\n%s", code, exitBuild, stdout)
	}
	if _, _, code := runCmd("check", spec, "--cache", cache, "--unchecked-ok"); code != exitOK {
		t.Errorf("--unchecked-ok: exit %d, want 0", code)
	}
}

// A kernel that spills fails a no_spills budget; the same source with
// fewer accumulators keeps within it.
func TestCheckSpillBudget(t *testing.T) {
	t.Parallel()
	needNVRTC(t)
	spec := buildCheckSpec(t,
		"{name: spill, kernel: TESTDATA/spill.cu, no_spills: true}",
		"{name: nospill, kernel: TESTDATA/spill.cu, defines: {ACC: 4}, no_spills: true, max_registers: 64}")
	stdout, stderr, code := runCmd("check", spec, "--cache", warmR4Cache(t))
	if code != exitBuild {
		t.Errorf("exit %d, want %d\n%s%s", code, exitBuild, stdout, stderr)
	}
	for _, w := range []string{"FAILED spill.cu", "over the budget of spill: attn_partial: ", "bytes of local memory per thread (spills or a local array), against no_spills", "ok     spill.cu"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
}

// A grid that reads sms is planned at --sms; an architecture of no
// usual part (sm_89) without it is a spec error, not a guess.
func TestCheckSMs(t *testing.T) {
	t.Parallel()
	needNVRTC(t)
	spec := buildCheckSpec(t, `{name: persist, kernel: TESTDATA/argcheck.cu, launches: [{entry: step, grid: ["sms * 2"], block: [32], args: [q, out, heads, scale]}]}`)
	cache := t.TempDir()
	var o, e bytes.Buffer
	err := run(&o, &e, []string{"check", spec, "--arch", "sm_89", "--cache", cache})
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), `reads sms, and there is no default SM count for arch "sm_89"`) {
		t.Errorf("without --sms: %v, want exit %d and the reason", err, exitUsage)
	}
	if stdout, stderr, code := runCmd("check", spec, "--arch", "sm_89", "--sms", "142", "--cache", cache); code != exitOK || !strings.Contains(stdout, "ok     argcheck.cu") {
		t.Errorf("--sms 142: exit %d, want %d:\n%s%s", code, exitOK, stdout, stderr)
	}
}
