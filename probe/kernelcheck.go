package probe

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cubin"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/occupancy"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sass"
	"github.com/ktune/ktune/plan"
)

// A CheckStatus is the verdict on one kernel of ktune check.
type CheckStatus string

const (
	// CheckBuilt: it compiled (or its prebuilt image parsed), every entry
	// its launches name is in the image, and no limit is broken.
	CheckBuilt CheckStatus = "built"
	// CheckFailed: NVRTC rejected it, an entry is missing, or a launch
	// breaks a limit of the image or the architecture.
	CheckFailed CheckStatus = "failed"
	// CheckUnsupported: it needs a newer NVRTC than the one found (an
	// architecture or a PTX feature it does not know), so it was not
	// checked. Not a pass: nothing is known about the kernel.
	CheckUnsupported CheckStatus = "needs newer NVRTC"
	// CheckNoHeaders: it includes a CUDA toolkit header (cuda_fp16.h …)
	// that neither NVRTC's built-in headers nor any -I directory of this
	// machine supplies, so it was not checked. Not a pass either.
	CheckNoHeaders CheckStatus = "needs CUDA headers"
	// CheckNoCompiler: the variant is built by the engine's own command
	// (build:), whose compiler this machine lacks, so it was not built
	// nor checked. Not a pass either.
	CheckNoCompiler CheckStatus = "needs its build's compiler"
	// CheckSkipped: a prebuilt kernel that is not built yet (a build
	// output, absent from a clean checkout), so there is nothing to read.
	CheckSkipped CheckStatus = "skipped"
)

// Unchecked reports whether the kernel could not be checked on this
// machine (an NVRTC too old, CUDA headers it lacks): nothing is known of
// it, which ktune check counts as a failure unless told otherwise.
func (s CheckStatus) Unchecked() bool {
	return s == CheckUnsupported || s == CheckNoHeaders || s == CheckNoCompiler
}

// A KernelCheck is one distinct kernel of a plan and what checking it
// found.
type KernelCheck struct {
	// Key is its CUBIN cache key: the hash a sweep compiles it under.
	Key string
	// Source is its file name as given to NVRTC; Arch what it was built
	// for (a variant's -arch flag, else the check's).
	Source, Arch string
	// Uses names the variants (with their defines) that run it.
	Uses []string
	// Options are its NVRTC options; empty for a prebuilt image.
	Options []string
	// Artifact is the kind of a prebuilt image (ptx, cubin, fatbin),
	// empty for a kernel NVRTC compiles.
	Artifact string
	Status   CheckStatus
	// Problems say why the status is not CheckBuilt; Notes are what was
	// not checked, and why.
	Problems, Notes []string
	// Log is NVRTC's build log, warnings included.
	Log string
	// Seconds is NVRTC's run time (or the wait for another process
	// compiling it); Cached is set when this check did not run NVRTC.
	Seconds float64
	Cached  bool
	// Entries are the entry points its launches name, in launch order.
	Entries []EntryCheck
	// LoadsBeforeChain is sass.LoadsBeforeChain of the first entry,
	// -1 when no disassembler read it.
	LoadsBeforeChain int

	src       plan.Source
	budgetsOf []variantBudget
	declared  []declaredLaunch
	assumed   []assumedOccupancy
	layouts   []plan.LayoutCheck
}

// A variantBudget is the budget of one variant that runs a kernel.
type variantBudget struct {
	variant string
	budget  plan.Budget
}

// An EntryCheck is one entry point of a kernel, as its image and its
// launches say.
type EntryCheck struct {
	// Entry is the name the launches use; Symbol what it resolved to in
	// the image (a name expression's mangled name), empty when missing.
	Entry, Symbol string
	// Threads and DynamicShared are the largest block and dynamic shared
	// memory of the launches that run it.
	Threads, DynamicShared int
	// Known is set when the image told the resources below (a CUBIN: a
	// PTX image's are decided by the driver's JIT when it loads).
	Known bool
	// Registers per thread, FrameBytes of local memory per thread (spills
	// and local arrays), StaticShared bytes, and MaxThreads, the block
	// __launch_bounds__ allows (0: not bounded): cubin.Function's.
	Registers, FrameBytes, StaticShared, MaxThreads int
	// LocalLoads and LocalStores count LDL and STL instructions in the
	// SASS (-1: no disassembler): spills show as both.
	LocalLoads, LocalStores int
	// Params are the entry's parameters as the CUBIN records them
	// (checkparams.go); nil when it records none.
	Params []abi.ParamSlot
	// Occupancy is the resident blocks per SM of its largest launch, as
	// the image's resources give them (occupancycheck.go); Blocks -1 when
	// not computed (the architecture is not described, or no CUBIN).
	// OccupancyLow is below it where the image's static shared memory may
	// or may not count the driver's reserve (a prebuilt CUBIN).
	Occupancy, OccupancyLow occupancy.Result
}

// The shared memory the driver reserves per block (occupancy.ReservedShared,
// sm_80 on): NVRTC 11's CUBINs count it in the .nv.shared section of every
// kernel that uses shared memory; NVRTC 12 and 13 do not, and the driver
// reports the kernel's own bytes (the H200 results, NVRTC 13: mma 33280
// and gqa 38400 static bytes where NVRTC 11.8's sections hold 34304 and
// 39424). readImage takes it off, so that the static shared memory check
// reports (and the limit and budgets judge) is the one a sweep records.

var smNumber = regexp.MustCompile(`^sm_([0-9]+)`)

// readImage finds the entries in an image and checks the launches
// against what it says. lowered maps name expressions to symbols.
func (k *KernelCheck) readImage(image []byte, lowered map[string]string, env checkEnv) {
	k.LoadsBeforeChain = -1
	for i := range k.Entries {
		k.Entries[i].LocalLoads, k.Entries[i].LocalStores = -1, -1
		k.Entries[i].Occupancy.Blocks, k.Entries[i].OccupancyLow.Blocks = -1, -1
	}
	switch cuda.Kind(image) {
	case cuda.ImagePTX:
		have := cubin.PTXEntries(image)
		for i := range k.Entries {
			e := &k.Entries[i]
			if sym := symbolOf(k.src, lowered, e.Entry); slices.Contains(have, sym) {
				e.Symbol = sym
			} else {
				k.fail("the PTX has no entry %s (it has %s)", sym, listOrNone(have))
			}
		}
		k.Notes = append(k.Notes, "resources not known: a PTX image is compiled by the driver when it loads")
		if len(k.budgetsOf) > 0 {
			k.Notes = append(k.Notes, "budget not checked here: a sweep checks it once the driver has compiled the PTX")
		}
		return
	case cuda.ImageFatbin:
		// A fatbin's CUBINs may be compressed: only an uncompressed one,
		// found by its ELF header, can be read without the driver.
		at := bytes.Index(image, []byte("\x7fELF"))
		if at < 0 {
			k.Notes = append(k.Notes, "entries and resources not checked: the fatbin holds no uncompressed CUBIN")
			return
		}
		image = image[at:]
	}
	img, err := cubin.Parse(image)
	if err != nil {
		k.fail("%v", err)
		return
	}
	sm := 0
	if m := smNumber.FindStringSubmatch(k.Arch); m != nil {
		fmt.Sscan(m[1], &sm)
	}
	for i := range k.Entries {
		e := &k.Entries[i]
		sym := symbolOf(k.src, lowered, e.Entry)
		if sym == "" {
			k.fail("NVRTC resolved no symbol for the name expression %q", e.Entry)
			continue
		}
		fn := img.Functions[sym]
		if fn == nil || !fn.Entry {
			k.fail("the image has no entry %s (it has %s)", sym, listOrNone(img.Entries()))
			continue
		}
		e.Symbol, e.Known = sym, true
		e.Registers, e.FrameBytes, e.StaticShared, e.MaxThreads = fn.Registers, fn.FrameBytes, fn.StaticShared, fn.MaxThreads
		// Only for a CUBIN this NVRTC built: a prebuilt one's compiler is
		// not known, and its section is reported as it is.
		if r := occupancy.ReservedShared(sm); k.Artifact == "" && strings.HasPrefix(env.version, "11.") && r > 0 && e.StaticShared >= r {
			e.StaticShared -= r
		}
		k.limits(e, sm)
		k.checkOccupancy(e, sm)
		k.checkParams(e, fn)
	}
	k.budgets()
	k.readSASS(image, env)
}

// limits checks one entry's launches against what the hardware refuses:
// a block over __launch_bounds__, more shared memory or registers than a
// block may have. Each would fail the launch on a GPU.
func (k *KernelCheck) limits(e *EntryCheck, sm int) {
	if e.MaxThreads > 0 && e.Threads > e.MaxThreads {
		k.fail("%s: a block of %d threads is over its __launch_bounds__ of %d: the launch is refused", e.Entry, e.Threads, e.MaxThreads)
	}
	if arch, ok := occupancy.For(sm); ok && e.StaticShared+e.DynamicShared > arch.MaxSharedPerBlock() {
		k.fail("%s: %d bytes of shared memory (%d static + %d dynamic) are over the %d a block may have on sm_%d",
			e.Entry, e.StaticShared+e.DynamicShared, e.StaticShared, e.DynamicShared, arch.MaxSharedPerBlock(), sm)
	}
	if e.Registers > 0 && e.Threads > 0 {
		if occupancy.BlockRegisters(e.Registers, e.Threads) > occupancy.RegistersPerBlock {
			k.fail("%s: %d registers per thread × %d threads are over the %d registers of a block", e.Entry, e.Registers, e.Threads, occupancy.RegistersPerBlock)
		}
	}
}

// readSASS applies the SASS rules of sass.go where a disassembler is
// installed: the first entry's loads before the softmax chain, and every
// entry's local-memory traffic. They inform; they never fail a kernel.
func (k *KernelCheck) readSASS(image []byte, env checkEnv) {
	if env.disasm == nil {
		k.Notes = append(k.Notes, "SASS not checked: no nvdisasm/cuobjdump")
		return
	}
	listing, err := env.disasm(image)
	if err != nil {
		k.Notes = append(k.Notes, fmt.Sprintf("SASS not checked: %v", err))
		return
	}
	fns, err := sass.Parse(listing)
	if err != nil {
		k.Notes = append(k.Notes, fmt.Sprintf("SASS not checked: %v", err))
		return
	}
	for i := range k.Entries {
		e := &k.Entries[i]
		f, ok := fns[e.Symbol]
		if !ok {
			continue
		}
		e.LocalLoads, e.LocalStores = sass.LocalTraffic(f)
		if i == 0 {
			k.LoadsBeforeChain = sass.LoadsBeforeChain(f)
		}
	}
}

// overBudget says what of a variant's budget the resources of a point's
// launches break, entry by entry; "" when none. The sweep and ktune check
// both judge by it, so the two agree on what a budget means.
func overBudget(b plan.Budget, res []results.Resource) string {
	if b.IsZero() {
		return ""
	}
	var out []string
	for _, r := range res {
		for _, v := range b.Breaks(r.Registers, r.LocalBytes, r.StaticShared, r.DynamicShared) {
			out = append(out, r.Kernel+": "+v)
		}
	}
	return strings.Join(out, "; ")
}

// budgets checks the entries against the budget of every variant that
// runs the kernel.
func (k *KernelCheck) budgets() {
	var res []results.Resource
	for _, e := range k.Entries {
		if e.Known {
			res = append(res, results.Resource{Kernel: e.Entry, Registers: e.Registers, LocalBytes: e.FrameBytes,
				StaticShared: e.StaticShared, DynamicShared: e.DynamicShared})
		}
	}
	for _, vb := range k.budgetsOf {
		if breaks := overBudget(vb.budget, res); breaks != "" {
			k.fail("over the budget of %s: %s", vb.variant, breaks)
		}
	}
}

// fail records a problem that fails the kernel.
func (k *KernelCheck) fail(format string, args ...any) {
	k.Status = CheckFailed
	k.Problems = append(k.Problems, fmt.Sprintf(format, args...))
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// newerSigns are the diagnostics an NVRTC gives for a feature it is too
// old for, with what the feature is: ptxas refusing an instruction or a
// PTX version, the front end not knowing an architecture.
var newerSigns = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?i)not supported on \.target|requires \.target|requires target`), "an instruction this NVRTC's ptxas does not support on the target"},
	{regexp.MustCompile(`(?i)PTX ISA version|Unsupported \.version|requires PTX ISA`), "a PTX version newer than this NVRTC's"},
	// ptxas of CUDA 11.8 knows barrier.cluster.arrive but not its
	// .release form (PTX ISA 8.0, CUDA 12.0): an instruction form added
	// later reads as an illegal modifier to an older ptxas.
	{regexp.MustCompile(`Illegal modifier '[^']+' for instruction`), "an instruction form (modifier) this NVRTC's ptxas does not know, added in a later PTX ISA"},
	{regexp.MustCompile(`(?i)invalid value for --gpu-architecture|unsupported gpu architecture`), "an architecture this NVRTC does not know"},
}

// missingHeader matches the front end's message for an include it cannot
// find, e.g. cuda_fp16.h, which NVRTC 12 carries built in and NVRTC 11
// does not.
var missingHeader = regexp.MustCompile(`cannot open source file "([^"]+)"`)

// headerHint says which CUDA toolkit header a rejected build lacked and
// where it comes from; "" when the log names none (a header of the
// kernel's own that is missing is the kernel's mistake).
func headerHint(log string) string {
	m := missingHeader.FindStringSubmatch(log)
	if m == nil || !strings.HasPrefix(m[1], "cuda") {
		return ""
	}
	return fmt.Sprintf("%s was not found: NVRTC 11 carries none of the toolkit's headers built in (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h), "+
		"and no -I directory of the variant's flags holds it here; the CUDA toolkit's include directory supplies it "+
		"(Debian: nvidia-cuda-dev, 0.8 GB with the driver's libraries, in /usr/include)", m[1])
}

// needsNewer reads a rejected build's log for a feature the NVRTC found
// is too old for; "" when the log shows none (a plain mistake in the
// source).
func needsNewer(log, version string) string {
	for _, s := range newerSigns {
		if s.re.MatchString(log) {
			return fmt.Sprintf("it uses %s: it needs a newer NVRTC than %s", s.what, version)
		}
	}
	return ""
}
