package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
)

func init() {
	register(&command{
		name:    "check",
		summary: "compile every kernel of specs without a GPU: build log, registers, spills, shared memory",
		run:     checkCmd,
	})
}

const checkUsage = `Usage: ktune check SPEC... [--arch sm_90] [--sms N] [--cache DIR|off] [-j N]

Check compiles every distinct kernel of each spec's plan (bitwise twins
included) for one architecture, without a GPU: NVRTC alone does it. It
goes through a sweep's own compile path, with the same options and under
the same CUBIN cache key, so a kernel check built is the one a sweep on
that architecture loads; each distinct kernel is compiled once, across
all the specs, -j at a time (default: GOMAXPROCS, every core). As each kernel's check
ends, standard error gets a line "[n/N] SOURCE KEY ok (1.2 s)" (or
FAILED, cached, …); the report itself goes to standard output at the
end.

Every launch's declared arguments are compared with the kernel's
parameters as the CUBIN records them (EIATTR_KPARAM_INFO: count, offset,
size): the first parameter that differs fails the kernel, named at the
launch's file:line:col (the variant's, for one running the ABI's
signature), as a sweep's probe would refuse it on a GPU.

For each kernel it prints the verdict, the variants that run it, NVRTC's
build log (warnings included) and, per entry point, what the CUBIN says
(its ELF .nv.info sections, read without the CUDA toolkit): registers,
local memory (spills and local arrays: "local"), static shared memory,
the dynamic shared memory and block of its launches, the block its
__launch_bounds__ allows, and the blocks of its largest launch an SM
holds at once, with what bounds them ("8 blocks per SM (registers)":
computed as CUDA's occupancy calculator does, from the architecture's
figures). Where cuobjdump or nvdisasm is installed, it
also counts the first entry's global loads issued before the softmax
chain and every entry's local loads and stores in the SASS; where not,
it says "SASS not checked". A prebuilt PTX, CUBIN or fatbin is read for
its entry points (and a CUBIN's resources) instead of being compiled; one
not built yet is skipped, saying so.

A kernel fails when NVRTC rejects it (the log says why; a CUDA header it
cannot find is named), when an entry point its launches name is not in
the image, or when a launch breaks a limit a GPU would refuse it for: a
block over __launch_bounds__, more shared memory than a block may have on
the architecture, more registers than a block's register file; and when
it breaks the resource budget of a variant that runs it (max_registers,
no_spills, max_shared: internal/spec/doc.go); and when a launch's
assumed blocks per SM (its spec's blocks_per_sm, or --blocks-per-sm for
a grid that reads it) is not what the image gives. A kernel
for an architecture or a PTX feature newer than the NVRTC found is
reported as needing a newer NVRTC (which release, where known), and one
including a CUDA toolkit header (cuda_fp16.h) that this machine lacks as
needing CUDA headers: neither was checked, so both fail too, unless
--unchecked-ok lets them through (listed, counted, not passed).

NVRTC is found as by a sweep (KTUNE_NVRTC, the loader's path, CUDA_HOME,
/usr/local/cuda), newest first, from CUDA 11.8 (libnvrtc.so.11.2) on; the
first line names the library and its version.

A variant built by its engine's own command (build:) is built here, with
that command, where its compiler exists (the build cache sits beside the
CUBIN cache); where it does not, the kernel is reported as needing its
build's compiler, not checked, and fails like the other unchecked ones.
A build that fails fails its kernel, with the command's output.

Exit status: 0 every kernel built (prebuilt ones not built yet are
skipped, saying so), 3 a kernel failed or could not be checked, 2 a spec
error (file:line:col: message), 1 no NVRTC.

A spec whose grids, arguments or scratch sizes read sms (the device's SM
count) is planned at --sms, or at the architecture's usual part (132 for
sm_90); an architecture without one (sm_89) needs --sms. --blocks-per-sm
is plan's: the occupancy a grid assumes where its launch declares none.

Examples:
  $ ktune check experiments/slice.yaml
  $ ktune check experiments/*.yaml --cache off
  $ ktune check my.yaml --arch sm_90a

Flags:
`

func checkCmd(stdout, stderr io.Writer, args []string) error {
	fl := flag.NewFlagSet("check", flag.ContinueOnError)
	fl.SetOutput(stderr)
	arch := fl.String("arch", "sm_90", "GPU architecture `ARCH` to build for (NVRTC -arch); a variant's own -arch flag replaces it")
	cache := fl.String("cache", "", "CUBIN cache `DIR` shared with sweeps (\"\" the default, \"off\" none)")
	jobs := fl.Int("j", 0, "`N` compiles at once (0: GOMAXPROCS)")
	var over plan.Override
	deviceFlags(fl, &over)
	var axes axisFlags
	axes.register(fl)
	uncheckedOK := fl.Bool("unchecked-ok", false, "kernels this machine cannot check (an NVRTC too old for them, CUDA headers it lacks) are listed but do not fail")
	paths, help, err := parseArgs(fl, args, checkUsage)
	if help || err != nil {
		return err
	}
	if len(paths) == 0 {
		fl.Usage()
		return usageErrorf("check: want at least one SPEC")
	}
	if err := spec.CheckArch(*arch); err != nil {
		return usageErrorf("check --arch: %v", err)
	}
	if *jobs < 0 {
		return usageErrorf("check -j: %d compiles at once: want 1 or more, or 0 for GOMAXPROCS", *jobs)
	}
	builds, err := probe.BuildDir(*cache)
	if err != nil {
		return fmt.Errorf("check: the build cache: %w", err)
	}
	var sets []probe.CheckSet
	for _, path := range paths {
		s, err := loadSpec(path, axes...)
		if err != nil {
			return err
		}
		// A variant's own build (build:) runs here where its compiler
		// exists; where not, its kernel is reported as not checked.
		o := over
		o.RunBuilds, o.BuildDir, o.BuildLog = true, builds, stderr
		p, err := plan.BuildWith(s, *arch, o)
		if err != nil {
			return planError(path, err)
		}
		if err := checkLaunches(s, p.Points); err != nil {
			return err
		}
		for _, w := range p.Warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", path, w)
		}
		sets = append(sets, probe.CheckSet{Name: s.Name, Points: p.Points, Where: launchWhere(s)})
	}
	progress := func(done, total int, k *probe.KernelCheck) {
		fmt.Fprintf(stderr, "[%d/%d] %s %s %s (%s)\n", done, total, k.Source, shortKey(k), checkVerdict(k), checkHow(k))
	}
	rep, err := probe.Check(sets, probe.CheckOptions{Arch: *arch, CacheDir: *cache, Threads: *jobs, Log: stderr, Progress: progress})
	if err != nil {
		return err
	}
	counts := writeCheck(stdout, rep, *arch)
	failed := counts[probe.CheckFailed]
	unchecked := counts[probe.CheckUnsupported] + counts[probe.CheckNoHeaders] + counts[probe.CheckNoCompiler]
	switch {
	case failed > 0:
		return withCode(exitBuild, fmt.Errorf("check: %d of %d kernels failed", failed, len(rep.Kernels)))
	case unchecked > 0 && !*uncheckedOK:
		return withCode(exitBuild, fmt.Errorf("check: %d of %d kernels could not be checked here (above: why); --unchecked-ok lets them pass unchecked", unchecked, len(rep.Kernels)))
	}
	return nil
}

// writeCheck prints the report: a header, one block per kernel, a
// summary; it returns the count of each status.
func writeCheck(w io.Writer, rep *probe.CheckReport, arch string) map[probe.CheckStatus]int {
	sassTool := "SASS: not checked (no nvdisasm/cuobjdump)"
	if rep.Disassembler != "" {
		sassTool = "SASS: " + rep.Disassembler
	}
	fmt.Fprintf(w, "NVRTC %s (%s), %s; %s\n\n", rep.NVRTCVersion, rep.NVRTC, arch, sassTool)
	for _, k := range rep.Kernels {
		writeKernelCheck(w, k)
	}
	counts := rep.Count()
	noCompiler := ""
	if n := counts[probe.CheckNoCompiler]; n > 0 {
		noCompiler = fmt.Sprintf(", %d need their build's compiler", n)
	}
	fmt.Fprintf(w, "%d distinct kernels: %d built, %d failed, %d need a newer NVRTC, %d need CUDA headers%s, %d skipped; %.1f s wall, %.1f s of NVRTC\n",
		len(rep.Kernels), counts[probe.CheckBuilt], counts[probe.CheckFailed], counts[probe.CheckUnsupported], counts[probe.CheckNoHeaders],
		noCompiler, counts[probe.CheckSkipped], rep.WallSeconds, rep.CPUSeconds)
	return counts
}

// maxUses bounds the variants listed per kernel; the rest are counted.
const maxUses = 3

// checkVerdict is a kernel's verdict as check prints it: ok, FAILED, …
func checkVerdict(k *probe.KernelCheck) string {
	if k.Status == probe.CheckBuilt {
		return "ok"
	}
	return strings.ToUpper(string(k.Status))
}

// shortKey is the kernel's cache key, cut to 12 characters (a prebuilt
// one's whole).
func shortKey(k *probe.KernelCheck) string {
	if len(k.Key) > 12 && k.Artifact == "" {
		return k.Key[:12]
	}
	return k.Key
}

// checkHow says how the kernel was had: NVRTC's seconds, the cache, or a
// prebuilt file.
func checkHow(k *probe.KernelCheck) string {
	switch {
	case k.Artifact != "":
		return "prebuilt " + k.Artifact
	case k.Cached:
		return "cached"
	}
	return fmt.Sprintf("%.1f s", k.Seconds)
}

func writeKernelCheck(w io.Writer, k *probe.KernelCheck) {
	uses := k.Uses
	more := ""
	if len(uses) > maxUses {
		more = fmt.Sprintf(" (+%d more)", len(uses)-maxUses)
		uses = uses[:maxUses]
	}
	fmt.Fprintf(w, "%-6s %s %s [%s, %s]: %s%s\n", checkVerdict(k), k.Source, shortKey(k), k.Arch, checkHow(k), strings.Join(uses, "; "), more)
	for _, p := range k.Problems {
		fmt.Fprintf(w, "    %s\n", p)
	}
	for _, e := range k.Entries {
		if !e.Known {
			continue
		}
		bound := ""
		if e.MaxThreads > 0 {
			bound = fmt.Sprintf(" (bound %d)", e.MaxThreads)
		}
		name := e.Entry
		if e.Symbol != "" && e.Symbol != e.Entry && k.Artifact != "" {
			name += " (" + e.Symbol + ")" // a C++ name and the symbol it resolved to
		}
		fmt.Fprintf(w, "    %s: %d registers, %d B local, %d B static + %d B dynamic shared, block %d%s",
			name, e.Registers, e.FrameBytes, e.StaticShared, e.DynamicShared, e.Threads, bound)
		switch {
		case e.Occupancy.Blocks >= 0 && e.OccupancyLow.Blocks != e.Occupancy.Blocks:
			fmt.Fprintf(w, ", %d to %s", e.OccupancyLow.Blocks, e.Occupancy)
		case e.Occupancy.Blocks >= 0:
			fmt.Fprintf(w, ", %s", e.Occupancy)
		}
		if e.LocalLoads >= 0 {
			fmt.Fprintf(w, ", SASS %d LDL %d STL", e.LocalLoads, e.LocalStores)
		}
		fmt.Fprintln(w)
	}
	if k.LoadsBeforeChain >= 0 {
		fmt.Fprintf(w, "    SASS: %d global loads before the softmax chain\n", k.LoadsBeforeChain)
	}
	for _, n := range k.Notes {
		if !strings.HasPrefix(n, "SASS not checked: no ") { // said once in the header
			fmt.Fprintf(w, "    %s\n", n)
		}
	}
	if k.Log != "" {
		for _, l := range strings.Split(k.Log, "\n") {
			fmt.Fprintf(w, "    | %s\n", l)
		}
	}
}
