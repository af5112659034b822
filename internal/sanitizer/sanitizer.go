// Package sanitizer knows NVIDIA compute-sanitizer as ktune uses it: the
// four tools, the command line a worker process runs under, and how to read
// the report each run leaves in its log file. It runs nothing itself (the
// sweep does, sweep/sanitize.go), so that reading a report is tested on
// any machine.
package sanitizer

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/kernels"
)

// A Tool is one compute-sanitizer checker.
type Tool string

const (
	// Memcheck: out-of-bounds and misaligned accesses to global, local and
	// shared memory, and hardware exceptions.
	Memcheck Tool = "memcheck"
	// Racecheck: shared-memory data races (hazards between threads of a
	// block without a barrier between them).
	Racecheck Tool = "racecheck"
	// Synccheck: invalid uses of barriers and warp-synchronous primitives.
	Synccheck Tool = "synccheck"
	// Initcheck: reads of global memory never written.
	Initcheck Tool = "initcheck"
)

// Tools lists every tool, in the order a sweep runs them.
var Tools = []Tool{Memcheck, Racecheck, Synccheck, Initcheck}

// ParseTools reads --sanitize's value: a comma-separated list of tools,
// or "true" (the flag given bare) or "all" for every one of them.
func ParseTools(s string) ([]Tool, error) {
	if s == "true" || s == "all" {
		return slices.Clone(Tools), nil
	}
	var out []Tool
	for _, part := range strings.Split(s, ",") {
		t := Tool(strings.TrimSpace(part))
		if !slices.Contains(Tools, t) {
			return nil, fmt.Errorf("unknown tool %q (memcheck, racecheck, synccheck, initcheck)", part)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// BinaryEnv names the variable that points ktune at a compute-sanitizer
// binary of its own choosing.
const BinaryEnv = "KTUNE_COMPUTE_SANITIZER"

// Binary finds compute-sanitizer: $KTUNE_COMPUTE_SANITIZER, else the one on
// PATH, else $CUDA_HOME/bin's, else /usr/local/cuda/bin's.
func Binary(getenv func(string) string) (string, error) {
	if p := getenv(BinaryEnv); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("compute-sanitizer"); err == nil {
		return p, nil
	}
	var tried []string
	for _, dir := range []string{getenv("CUDA_HOME"), "/usr/local/cuda"} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "bin", "compute-sanitizer")
		if _, err := exec.LookPath(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("compute-sanitizer is not on PATH (nor at %s); set %s", strings.Join(tried, ", "), BinaryEnv)
}

// PrintLimit bounds the errors one run reports in full: the verdict needs
// the count and the first few, and a kernel with a bad index reports one
// per thread.
const PrintLimit = 20

// Args is compute-sanitizer's command line for tool with its report in
// logFile, up to the program it runs (which follows). ktune's own
// measurement kernels (util.cu's: the bandwidth pass over gigabytes, the
// digests) are excluded, each by its exact name: they are not what is
// checked and would take most of the run under instrumentation. (The
// tool's kne key is the full mangled name, which for util.cu's extern "C"
// kernels is the name; each --kernel-name-exclude adds to the others:
// compute-sanitizer 2025.3's --help, experiments/results/h200/verdicts/
// sanitizer-names/.) API errors are not reported: they are the host's,
// not the kernel's, and ktune checks every driver call's result itself;
// on the H200 every kernel's memcheck run reported the
// CUDA_ERROR_INVALID_VALUE that ends ktune's walk over cuFuncGetParamInfo
// (the parameter check before any launch), d2 included.
func Args(tool Tool, logFile string) []string {
	a := []string{"--tool", string(tool), "--log-file", logFile, "--print-limit", strconv.Itoa(PrintLimit)}
	for _, name := range kernels.Util() {
		a = append(a, "--kernel-name-exclude", "kne="+name)
	}
	return append(a, "--report-api-errors", "no")
}

// Skipped reports whether the sanitizer skips a kernel of this name (an
// entry, a C++ name expression or a mangled symbol) as one of ktune's:
// under it, such a kernel runs unchecked, and a clean report says nothing
// of it. Only an exact util.cu name is skipped, so an engine's kernel
// that shares no more than a prefix with them (ktune's own Triton decode
// kernels, ktune_tt_partial and ktune_tt_combine) is checked. A name
// expression is taken as written, less a leading '&': an extern "C"
// kernel's expression lowers to its name, and a C++ one's to a mangled
// symbol (_Z...) that no util.cu name equals.
func Skipped(name string) bool {
	return slices.Contains(kernels.Util(), strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), "&")))
}

// A Report is what one run found.
type Report struct {
	Tool Tool
	// Errors is the count the summary line gives.
	Errors int
	// Findings are the first line of each error reported, in order,
	// repeats dropped, at most maxFindings.
	Findings []string
	// Complete says the summary line was there: the run ended normally.
	// A run that crashed or was killed leaves none, and proves nothing.
	Complete bool
	// Internal are compute-sanitizer's own failures ("Internal Sanitizer
	// Error: ..."), in order, repeats dropped. The summary counts each as
	// an error, but it is the tool's failure, not the kernel's: a run with
	// one checked nothing after it (on the H200, sixteen instrumented
	// workers at once filled the device's memory and some runs of each
	// tool ended so).
	Internal []string
	// TargetFailed says the program under the sanitizer (the worker)
	// ended with an error: what it was to check may never have run.
	TargetFailed bool
	// Hazards is the count of racecheck's warning-level hazards, as its
	// summary gives them ("(0 errors, 2 warnings)"). The tool calls them
	// warnings because the code may mean them, a warp assumed to run in
	// step; since Volta's independent thread scheduling no warp is, and
	// a kernel that relies on it races. Each fails the kernel, and the
	// hazard's own line ("Warning: Race reported between ...") is a
	// finding.
	Hazards int
	// Warnings are compute-sanitizer's other "Warning:" lines, in order,
	// repeats dropped: the tool saying something of its run that ktune
	// does not know. A run with one decides nothing (never seen on the
	// H200, in some 2500 reports).
	Warnings []string
	// Foreign is a summary line of another tool's kind than Tool's:
	// racecheck ends its report "RACECHECK SUMMARY", the others "ERROR
	// SUMMARY" (so every one of the H200's 2533 reports). A report with
	// one is of a run of another tool, and says nothing of this one's
	// checks; its counts are still read, a finding being a finding.
	Foreign string
}

// maxFindings is how many distinct findings a Report keeps.
const maxFindings = 5

var (
	errorSummary = regexp.MustCompile(`^ERROR SUMMARY: (\d+) errors?`)
	raceSummary  = regexp.MustCompile(`^RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)`)
)

// prefix starts every line compute-sanitizer writes.
const prefix = "========="

// Parse reads a compute-sanitizer log. A finding is a line of the tool's
// own (after the prefix, not indented: the indented lines are its
// backtrace) that is not the banner, a summary or a note about the
// program's exit.
func Parse(tool Tool, r io.Reader) (Report, error) {
	rep := Report{Tool: tool}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		text := strings.TrimPrefix(strings.TrimLeft(line, "="), " ")
		if m := raceSummary.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[1])
			w, _ := strconv.Atoi(m[2])
			rep.Errors = max(rep.Errors, n)
			rep.Hazards = max(rep.Hazards, w)
			rep.summary(tool == Racecheck, text)
			continue
		}
		if m := errorSummary.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[1])
			rep.Errors = max(rep.Errors, n)
			rep.summary(tool != Racecheck, text)
			continue
		}
		if text == "" || strings.HasPrefix(text, " ") || strings.HasPrefix(text, "\t") || info(text) {
			continue
		}
		if strings.HasPrefix(text, internalPrefix) {
			if !slices.Contains(rep.Internal, text) {
				rep.Internal = append(rep.Internal, text)
			}
			continue
		}
		if targetFailed(text) {
			rep.TargetFailed = true
			continue
		}
		if strings.HasPrefix(text, warningPrefix) && !strings.Contains(text, "Race reported") {
			if !slices.Contains(rep.Warnings, text) {
				rep.Warnings = append(rep.Warnings, text)
			}
			continue
		}
		if len(rep.Findings) < maxFindings && !slices.Contains(rep.Findings, text) {
			rep.Findings = append(rep.Findings, text)
		}
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("reading the %s report: %w", tool, err)
	}
	return rep, nil
}

// summary notes a summary line: of the tool's own kind (ours), the run
// ended normally; of another's, the report is foreign.
func (r *Report) summary(ours bool, text string) {
	if ours {
		r.Complete = true
	} else if r.Foreign == "" {
		r.Foreign = text
	}
}

// internalPrefix starts a line that reports compute-sanitizer's own
// failure.
const internalPrefix = "Internal Sanitizer Error"

// targetFailed reports a line saying that the program under the
// sanitizer failed, not what it ran.
func targetFailed(text string) bool {
	return strings.HasPrefix(text, "Target application returned an error") ||
		strings.HasPrefix(text, "Error: process didn't terminate successfully")
}

// warningPrefix starts a line of a racecheck warning-level hazard
// ("Warning: Race reported between ...") or of compute-sanitizer's own
// warning.
const warningPrefix = "Warning:"

// info reports a line that is no finding.
func info(text string) bool {
	for _, p := range []string{"COMPUTE-SANITIZER", "LEAK SUMMARY", "Note:"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// ToolFailureOnly reports a failing verdict's Detail whose only errors
// are compute-sanitizer's own failures, as an older ktune wrote them
// ("racecheck: 1 error(s): Internal Sanitizer Error: ..."): no verdict on
// the kernel.
func ToolFailureOnly(detail string) bool {
	_, list, ok := strings.Cut(detail, " error(s): ")
	if !ok {
		return false
	}
	for _, f := range strings.Split(list, "; ") {
		if !strings.HasPrefix(f, internalPrefix) {
			return false
		}
	}
	return true
}

// Found reports whether the run saw the program do something wrong: a
// finding of the tool's, or more errors in the summary than the tool's
// own failures account for. A report that found something fails its
// kernel whether or not it is complete.
func (r Report) Found() bool {
	return len(r.Findings) > 0 || r.Errors > len(r.Internal) || r.Hazards > 0
}

// Clean reports whether the report, on its own, says the run checked
// everything and found nothing: complete, no errors, no failure of the
// tool's or of the program's. Whether the program ran the kernel at all
// the report cannot say; the sweep checks that apart (sweep/sanitize.go).
func (r Report) Clean() bool {
	return r.Complete && r.Errors == 0 && r.Hazards == 0 && len(r.Findings) == 0 && len(r.Internal) == 0 &&
		len(r.Warnings) == 0 && !r.TargetFailed && r.Foreign == ""
}

// CleanDetail is the detail of a clean report of tool (Detail): the
// only detail a pass of tool carries.
func CleanDetail(tool Tool) string { return Report{Tool: tool, Complete: true}.Detail() }

// IsCleanDetail reports whether detail is a clean report's of one of the
// tools: the only detail a passing sanitizer gate carries.
func IsCleanDetail(detail string) bool {
	return slices.ContainsFunc(Tools, func(t Tool) bool { return detail == CleanDetail(t) })
}

// Detail says what the run found, for a gate's detail.
func (r Report) Detail() string {
	switch {
	case !r.Found() && r.Foreign != "":
		return fmt.Sprintf("%s: the report's summary is another tool's (%q): %s may not have run", r.Tool, r.Foreign, r.Tool)
	case !r.Found() && len(r.Internal) > 0:
		return fmt.Sprintf("%s: compute-sanitizer failed: %s", r.Tool, strings.Join(r.Internal, "; "))
	case !r.Found() && r.Complete && r.TargetFailed:
		return fmt.Sprintf("%s: no errors, but the program under it ended with an error", r.Tool)
	case !r.Found() && r.Complete && len(r.Warnings) > 0:
		return fmt.Sprintf("%s: no errors, but compute-sanitizer warned: %s", r.Tool, strings.Join(r.Warnings, "; "))
	case !r.Complete:
		s := fmt.Sprintf("%s: the run left no summary (the worker crashed, hung or was killed, or compute-sanitizer refused its options)", r.Tool)
		if len(r.Findings) > 0 {
			s += "; reported: " + strings.Join(r.Findings, "; ")
		}
		return s
	case r.Errors == 0 && r.Hazards == 0 && len(r.Findings) == 0:
		return fmt.Sprintf("%s: no errors", r.Tool)
	}
	s := fmt.Sprintf("%s: %d error(s)", r.Tool, r.Errors)
	if r.Hazards > 0 {
		s += fmt.Sprintf(" and %d warning-level hazard(s)", r.Hazards)
	}
	if len(r.Findings) > 0 {
		s += ": " + strings.Join(r.Findings, "; ")
	}
	return s
}
