package probe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
)

// smallCUBIN is internal/cubin's test image: entries bounded
// (__launch_bounds__(64), 256 B static shared, a 1 KiB frame, 32
// registers) and plain (8 registers).
func smallCUBIN(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../internal/cubin/testdata/small.cubin")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// smallArgs are arguments that match small.cubin's parameters:
// bounded(float*, const int*, int) and plain(float*).
var smallArgs = map[string][]string{"bounded": {"out", "seqlens", "heads"}, "plain": {"out"}}

// withLaunches gives a point launches of the named entries, each with
// block threads and dynamic shared memory, and smallArgs's arguments.
func withLaunches(p *plan.Point, threads, shared int, entries ...string) *plan.Point {
	for _, e := range entries {
		var args []abi.Arg
		for _, n := range smallArgs[e] {
			a, err := abi.ParseArg(n)
			if err != nil {
				panic(err)
			}
			args = append(args, a)
		}
		p.Launches = append(p.Launches, plan.Launch{Entry: e, Block: [3]int{threads, 1, 1}, Shared: shared, Args: args})
	}
	p.Source.Entries = entries
	return p
}

// fakeCheckEnv compiles every source to image, except those whose text
// names a log in rejects (then NVRTC rejects it with that log), and counts
// the compiles.
func fakeCheckEnv(image []byte, rejects map[string]string, calls *int) checkEnv {
	var mu sync.Mutex
	return checkEnv{
		compile: func(src, name string, _ map[string]string, _, _ []string) ([]byte, string, map[string]string, error) {
			mu.Lock()
			*calls++
			mu.Unlock()
			if log, ok := rejects[src]; ok {
				return nil, log, nil, &cuda.CompileError{Name: name, Log: log, Err: errors.New("NVRTC_ERROR_COMPILATION")}
			}
			return image, "warning: something", nil, nil
		},
		version:     "11.8",
		unsupported: func(arch string) string { return cuda.ArchSupport(arch, 11, 8, []int{80, 86, 89, 90}) },
		threads:     2,
		warn:        func(string, ...any) {},
	}
}

func TestCheckVerdicts(t *testing.T) {
	img := smallCUBIN(t)
	good := withLaunches(point("good", "good", 32, 1024), 64, 4096, "bounded", "plain")
	goodOther := withLaunches(point("good", "good", 32, 8192), 32, 8192, "bounded", "plain") // same kernel
	noEntry := withLaunches(point("noentry", "noentry", 32, 1024), 64, 0, "attn_partial")
	overBound := withLaunches(point("big", "big", 32, 1024), 128, 0, "bounded")
	overShared := withLaunches(point("shm", "shm", 32, 1024), 64, 230<<10, "bounded")
	bad := withLaunches(point("bad", "bad", 32, 1024), 64, 0, "bounded")
	modifier := withLaunches(point("cluster", "cluster", 32, 1024), 64, 0, "bounded")
	header := withLaunches(point("engine", "engine", 32, 1024), 64, 0, "bounded")
	aArch := withLaunches(point("wgmma", "wgmma", 32, 1024), 64, 0, "bounded")
	aArch.Flags = append(aArch.Flags, "-arch=sm_90a")
	missing := withLaunches(point("ptx", "", 32, 1024), 64, 0, "bounded")
	missing.Source.ArtifactKind, missing.Source.Missing = "ptx", "build/k.ptx"

	calls := 0
	env := fakeCheckEnv(img, map[string]string{
		"bad":     "bad.cu(9): error: expected an expression",
		"cluster": "ptxas application ptx input, line 1671; error   : Illegal modifier '.release' for instruction 'barrier.cluster.arrive'",
		"engine":  `d2_engine.cuh(32): catastrophic error: cannot open source file "cuda_fp16.h"`,
	}, &calls)
	env.threads = 3
	var progress []int // done, in call order
	reported := map[*KernelCheck]bool{}
	env.progress = func(done, total int, k *KernelCheck) {
		progress = append(progress, done)
		if k.Status == "" || reported[k] || total != 9 {
			t.Errorf("progress %d/%d: kernel %s status %q, reported before: %v", done, total, k.Source, k.Status, reported[k])
		}
		reported[k] = true
	}
	rep := check([]CheckSet{{Name: "s", Points: []*plan.Point{good, goodOther, noEntry, overBound, overShared, bad, modifier, header, aArch, missing}}}, "sm_90", env)
	// Progress counts each distinct kernel once as it ends: 1, 2, … N.
	if len(progress) != len(rep.Kernels) || !slices.IsSorted(progress) || progress[0] != 1 || progress[len(progress)-1] != len(rep.Kernels) {
		t.Errorf("progress calls %v for %d kernels", progress, len(rep.Kernels))
	}

	want := map[string]CheckStatus{
		"good.cu": CheckBuilt, "noentry.cu": CheckFailed, "big.cu": CheckFailed, "shm.cu": CheckFailed,
		"bad.cu": CheckFailed, "cluster.cu": CheckUnsupported, "engine.cu": CheckNoHeaders, "wgmma.cu": CheckUnsupported,
		"ptx.cu": CheckSkipped,
	}
	if len(rep.Kernels) != len(want) {
		t.Fatalf("%d kernels, want %d (the two good points share one)", len(rep.Kernels), len(want))
	}
	// Every source compiled once, none for the sm_90a one NVRTC 11.8
	// cannot build or the missing prebuilt one.
	if calls != 7 {
		t.Errorf("%d compiles, want 7", calls)
	}
	for _, k := range rep.Kernels {
		if k.Status != want[k.Source] {
			t.Errorf("%s: status %q, want %q (problems %q)", k.Source, k.Status, want[k.Source], k.Problems)
		}
	}
	byName := map[string]*KernelCheck{}
	for _, k := range rep.Kernels {
		byName[k.Source] = k
	}
	g := byName["good.cu"]
	if len(g.Uses) != 1 || g.Log != "warning: something" || len(g.Problems) != 0 {
		t.Errorf("good: uses %q, log %q, problems %q", g.Uses, g.Log, g.Problems)
	}
	b := g.Entries[0]
	// The two points' launches are merged to their largest; the 1 KiB the
	// driver reserves is taken off NVRTC 11's static shared memory.
	if b.Entry != "bounded" || !b.Known || b.Registers != 32 || b.FrameBytes != 1024 || b.StaticShared != 256 ||
		b.MaxThreads != 64 || b.Threads != 64 || b.DynamicShared != 8192 {
		t.Errorf("bounded: %+v", b)
	}
	if g.LoadsBeforeChain != -1 || !strings.Contains(strings.Join(g.Notes, ";"), "no nvdisasm/cuobjdump") {
		t.Errorf("without a disassembler: loads %d, notes %q", g.LoadsBeforeChain, g.Notes)
	}
	for src, sub := range map[string]string{
		"noentry.cu": "no entry attn_partial (it has bounded, plain)",
		"big.cu":     "128 threads is over its __launch_bounds__ of 64",
		"shm.cu":     "over the 232448 a block may have on sm_90",
		"cluster.cu": "needs a newer NVRTC than 11.8",
		"engine.cu":  "cuda_fp16.h was not found",
		"wgmma.cu":   "sm_90a needs NVRTC 12.0 or newer",
		"ptx.cu":     "build/k.ptx does not exist",
	} {
		if p := strings.Join(byName[src].Problems, "; "); !strings.Contains(p, sub) {
			t.Errorf("%s: problems %q, want %q", src, p, sub)
		}
	}
	if c := rep.Count(); c[CheckBuilt] != 1 || c[CheckFailed] != 4 {
		t.Errorf("counts %v", c)
	}
}

func TestCheckSASS(t *testing.T) {
	calls := 0
	env := fakeCheckEnv(smallCUBIN(t), nil, &calls)
	env.disasm = func([]byte) (string, error) { return "", errors.New("cuobjdump: boom") }
	rep := check([]CheckSet{{Points: []*plan.Point{withLaunches(point("k", "k", 32, 1), 32, 0, "plain")}}}, "sm_90", env)
	k := rep.Kernels[0]
	if k.Status != CheckBuilt || !strings.Contains(strings.Join(k.Notes, ";"), "SASS not checked: cuobjdump: boom") {
		t.Errorf("a failing disassembler: status %q, notes %q (it informs, never fails)", k.Status, k.Notes)
	}
}

func TestCheckKeyIsTheSweeps(t *testing.T) {
	p := point("r4", "r4 text", 32, 1024)
	p.Flags = append(p.Flags, "-arch=sm_90a")
	ks := checkJobs([]CheckSet{{Points: []*plan.Point{p}}}, "sm_90", "12.4")
	jobs := compileJobs([]*plan.Point{p}, "sm_90", "12.4")
	if len(ks) != 1 || ks[0].Key != jobs[0].key {
		t.Fatalf("check's key %v, the precompiler's %s", ks, jobs[0].key)
	}
	if ks[0].Arch != "sm_90a" {
		t.Errorf("arch %q: the variant's -arch flag builds for sm_90a", ks[0].Arch)
	}
}

// A variant's budget fails the kernel it runs where the CUBIN breaks it;
// a kernel shared by two variants answers to both budgets.
func TestCheckBudgets(t *testing.T) {
	mk := func(v string, b spec.Budget) *plan.Point {
		p := withLaunches(point(v, "same kernel", 32, 1024), 64, 4096, "bounded")
		p.Source.Name = "k.cu"
		p.Budget = b
		return p
	}
	for _, tc := range []struct {
		name   string
		points []*plan.Point
		want   string // "" within budget
	}{
		{"within", []*plan.Point{mk("a", spec.Budget{MaxRegisters: 32, MaxShared: 256 + 4096})}, ""},
		{"registers", []*plan.Point{mk("a", spec.Budget{MaxRegisters: 31})}, "over the budget of a: bounded: 32 registers, over max_registers 31"},
		{"spills", []*plan.Point{mk("a", spec.Budget{NoSpills: true})}, "1024 bytes of local memory per thread"},
		{"shared", []*plan.Point{mk("a", spec.Budget{MaxShared: 4351})}, "4352 bytes of shared memory (256 static + 4096 dynamic), over max_shared 4351"},
		{"the stricter of two variants", []*plan.Point{mk("a", spec.Budget{MaxRegisters: 64}), mk("b", spec.Budget{MaxRegisters: 16})},
			"over the budget of b: bounded: 32 registers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			rep := check([]CheckSet{{Points: tc.points}}, "sm_90", fakeCheckEnv(smallCUBIN(t), nil, &calls))
			if len(rep.Kernels) != 1 {
				t.Fatalf("%d kernels, want 1", len(rep.Kernels))
			}
			k := rep.Kernels[0]
			problems := strings.Join(k.Problems, "; ")
			if tc.want == "" && (k.Status != CheckBuilt || problems != "") || tc.want != "" && (k.Status != CheckFailed || !strings.Contains(problems, tc.want)) {
				t.Errorf("status %q, problems %q; want %q", k.Status, problems, tc.want)
			}
		})
	}
}

// The logs of an NVRTC too old for a kernel are told apart from a plain
// mistake in the source, which must not read as "needs a newer NVRTC".
func TestNeedsNewer(t *testing.T) {
	for log, want := range map[string]string{
		"ptxas application ptx input, line 1671; error   : Illegal modifier '.release' for instruction 'barrier.cluster.arrive'": "instruction form",
		"ptxas fatal   : Unsupported .version 8.3; current version is '7.8'":                                                     "PTX version",
		"ptxas error   : Instruction 'wgmma.mma_async' not supported on .target 'sm_90'":                                         "does not support on the target",
		"nvrtc: error: invalid value for --gpu-architecture (-arch)":                                                             "architecture this NVRTC does not know",
		"badcompile.cu(9): error: expected an expression":                                                                        "",
		`k.cu(3): catastrophic error: cannot open source file "mine.cuh"`:                                                        "",
	} {
		got := needsNewer(log, "11.8")
		if want == "" && got != "" || want != "" && (!strings.Contains(got, want) || !strings.Contains(got, "needs a newer NVRTC than 11.8")) {
			t.Errorf("%q: %q, want %q", log, got, want)
		}
	}
	if h := headerHint(`k.cu(3): catastrophic error: cannot open source file "mine.cuh"`); h != "" {
		t.Errorf("the kernel's own header: %q, want no CUDA header hint", h)
	}
}

// A prebuilt image is read, not compiled: its declared entries must be in
// it (a CUBIN's resources read as for a compiled one, a PTX text's entry
// directives only).
func TestCheckPrebuilt(t *testing.T) {
	img := smallCUBIN(t)
	prebuilt := func(v, kind string, image []byte, entries ...string) *plan.Point {
		p := withLaunches(point(v, "", 32, 1024), 32, 0, entries...)
		p.Source.ArtifactKind, p.Source.Artifact, p.Source.ArtifactSHA256 = kind, image, v
		return p
	}
	ptx := []byte(".version 7.8\n.target sm_90\n.visible .entry gqa_partial(\n.param .u64 p\n)\n{\nret;\n}\n")
	calls := 0
	rep := check([]CheckSet{{Points: []*plan.Point{
		prebuilt("cubin-ok", "cubin", img, "bounded"),
		prebuilt("cubin-missing", "cubin", img, "bounded", "attn_combine"),
		prebuilt("ptx-ok", "ptx", ptx, "gqa_partial"),
		prebuilt("ptx-missing", "ptx", ptx, "attn_partial"),
	}}}, "sm_90", fakeCheckEnv(img, nil, &calls))
	if calls != 0 {
		t.Errorf("%d compiles of prebuilt images", calls)
	}
	want := []struct {
		status  CheckStatus
		problem string
	}{
		{CheckBuilt, ""},
		{CheckFailed, "the image has no entry attn_combine (it has bounded, plain)"},
		{CheckBuilt, ""},
		{CheckFailed, "the PTX has no entry attn_partial (it has gqa_partial)"},
	}
	if len(rep.Kernels) != len(want) {
		t.Fatalf("%d kernels", len(rep.Kernels))
	}
	for i, k := range rep.Kernels {
		p := strings.Join(k.Problems, "; ")
		if k.Status != want[i].status || !strings.Contains(p, want[i].problem) {
			t.Errorf("%s: %q %q; want %q %q", k.Uses, k.Status, p, want[i].status, want[i].problem)
		}
	}
	if e := rep.Kernels[0].Entries[0]; !e.Known || e.Registers != 32 {
		t.Errorf("a prebuilt CUBIN's resources: %+v", e)
	}
	if e := rep.Kernels[2].Entries[0]; e.Known || !strings.Contains(strings.Join(rep.Kernels[2].Notes, ";"), "compiled by the driver") {
		t.Errorf("a PTX image's resources: %+v, notes %q", e, rep.Kernels[2].Notes)
	}
}

// TestCachedDisassembler: a listing is made once per CUBIN and tool and
// read back after; another CUBIN, or the tool changed, is disassembled
// again; without a cache every call runs the tool.
func TestCachedDisassembler(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "cuobjdump")
	if err := os.WriteFile(tool, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	calls := 0
	fake := func(cubin []byte) (string, error) {
		calls++
		return fmt.Sprintf("listing of %s #%d", cubin, calls), nil
	}
	d := cachedDisassembler(fake, tool, diskCache{dir: filepath.Join(dir, "cache")})
	first, _ := d([]byte("a"))
	again, _ := d([]byte("a"))
	if calls != 1 || first != again || first != "listing of a #1" {
		t.Errorf("same CUBIN: %d calls, %q then %q", calls, first, again)
	}
	if other, _ := d([]byte("b")); calls != 2 || other != "listing of b #2" {
		t.Errorf("another CUBIN: %d calls, %q", calls, other)
	}
	// Another toolkit in the same place: a new key.
	if err := os.WriteFile(tool, []byte("version 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	d = cachedDisassembler(fake, tool, diskCache{dir: filepath.Join(dir, "cache")})
	if got, _ := d([]byte("a")); calls != 3 || got != "listing of a #3" {
		t.Errorf("changed tool: %d calls, %q", calls, got)
	}
	d = cachedDisassembler(fake, tool, diskCache{})
	d([]byte("a"))
	d([]byte("a"))
	if calls != 5 {
		t.Errorf("no cache: %d calls, want 5", calls)
	}
}
