package plan

import (
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/ktune/ktune/"

// imports is the intended import graph of every package of the module: a
// package may import the packages listed here and no other package of the
// module. Data flows one way: spec → plan → compiled point (probe) →
// gates → samples → results → evidence → decisions (verdicts, reports,
// dispatch tables). The vocabulary below everything (abi, measure, stats,
// results' format) is imported downwards only: the spec format names
// probes through measure, not results; stats summarises samples without
// knowing the record that keeps them; the probe reads a point's budget
// from plan, never the spec; and the landing gate decides from package
// decision, never from the renderer. A new import is an edit here, and a
// new package must be placed here before the test passes.
var imports = map[string][]string{
	"internal/kvtype":    nil,
	"internal/expr":      nil,
	"internal/buildinfo": nil,
	"internal/table":     nil,
	"internal/golden":    nil,
	"internal/cuda":      nil,
	"internal/nvml":      nil,
	"internal/sass":      nil,
	"internal/cubin":     nil,
	"internal/occupancy": nil,
	"internal/measure":   nil,
	"internal/stats":     nil,
	"kernels":            nil,
	"internal/abi":       {"internal/expr", "internal/kvtype"},
	"internal/sanitizer": {"kernels"},
	"internal/catalog":   {"internal/abi"},
	"internal/oracle":    {"internal/abi", "internal/kvtype"},
	"internal/results":   {"internal/abi", "internal/measure", "internal/stats"},
	"variants":           {"internal/abi", "internal/catalog", "internal/kvtype"},
	"internal/spec":      {"internal/abi", "internal/catalog", "internal/expr", "internal/kvtype", "internal/measure", "internal/oracle"},
	"plan": {"internal/abi", "internal/catalog", "internal/cubin", "internal/expr", "internal/measure", "internal/oracle",
		"internal/results", "internal/spec", "internal/table", "kernels"},
	"probe": {"internal/abi", "internal/buildinfo", "internal/cubin", "internal/cuda", "internal/expr",
		"internal/kvtype", "internal/nvml", "internal/occupancy", "internal/oracle", "internal/results", "internal/sass", "internal/stats", "kernels", "plan", "probe/gate"},
	// The gates: what each checks and their order, over the session the
	// probe lends them (an interface it defines, the probe implements).
	"probe/gate":        {"internal/abi", "internal/cuda", "internal/oracle", "internal/results", "plan"},
	"sweep":             {"internal/abi", "internal/results", "internal/sanitizer", "internal/stats", "plan"},
	"replay":            {"internal/results", "plan"},
	"search":            {"internal/decision", "internal/results", "internal/stats", "plan", "sweep"},
	"internal/evidence": {"internal/abi", "internal/results", "internal/sanitizer", "internal/stats"},
	"internal/decision": {"internal/abi", "internal/results", "internal/stats"},
	"internal/workload": {"internal/stats"},
	"internal/dispatch": {"internal/abi", "internal/decision", "internal/kvtype", "internal/results", "internal/stats", "internal/table"},
	"report": {"internal/abi", "internal/decision", "internal/dispatch", "internal/evidence", "internal/measure", "internal/results", "internal/stats",
		"internal/table", "internal/workload"},
	"verdict": {"internal/decision", "internal/evidence", "internal/measure", "internal/results", "internal/stats",
		"internal/table", "internal/workload"},
	"experiments/slurm":             nil,
	"experiments/slurm/samerecords": {"internal/results"},
	// make test's summary of go test -json: the standard library only.
	"tools/testsum": nil,
	// The command wires every stage together.
	"cmd/ktune": {"*"},
}

// against are dependencies, direct or not, that run against the flow, each
// with what it once was: a whitelist edit that reintroduces one still fails.
var against = []struct{ pkg, dep, why string }{
	{"probe", "sweep", "the CUDA backend depended on the driver"},
	{"probe/gate", "probe", "the gates on the probe that lends them their session"},
	{"probe", "search", "a stage below the search"},
	{"probe", "report", "a stage below the renderer"},
	{"internal/spec", "variants", "the spec format on ktune's list of kernels"},
	{"internal/spec", "plan", "the format on its expansion"},
	{"internal/spec", "internal/results", "probe names from the results format"},
	{"internal/stats", "internal/results", "Summary, now stats' own"},
	{"plan", "sweep", "the plan on its driver"},
	{"plan", "probe", "the plan on its measurement"},
	{"search", "probe", "the strategies on one backend"},
	{"report", "plan", "the renderer on the plan"},
	{"report", "sweep", "the renderer on the driver"},
	{"verdict", "report", "the landing gate on the renderer (rows, keys, the comparison)"},
	{"verdict", "plan", "the gate on the plan"},
	{"internal/decision", "report", "decisions on their renderer"},
	{"internal/decision", "verdict", "decisions on the gate"},
	{"internal/decision", "internal/dispatch", "decisions on the dispatch table"},
	{"internal/workload", "report", "the traffic model on what weighs by it"},
	{"internal/workload", "verdict", "the traffic model on the gate"},
	{"internal/workload", "internal/dispatch", "the traffic model on the dispatch table"},
	{"internal/dispatch", "report", "the dispatch table on a renderer"},
	{"internal/results", "internal/spec", "the format on the spec"},
	{"internal/results", "internal/evidence", "the format on its reader's judgement"},
	{"internal/abi", "internal/results", "the ABI on the format that records it"},
}

// TestLayering checks every import of every package of the module against
// the intended graph (imports) and the dependencies that run against the
// flow (against).
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		graph[pkg] = nil
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) {
				graph[pkg] = append(graph[pkg], strings.TrimPrefix(d, module))
			}
		}
	}
	var pkgs []string
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		allowed, placed := imports[p]
		if !placed {
			t.Errorf("%s is not in the intended import graph (imports): place it", p)
			continue
		}
		for _, d := range graph[p] {
			if !slices.Contains(allowed, d) && !slices.Contains(allowed, "*") {
				t.Errorf("%s imports %s, which the intended graph does not allow", p, d)
			}
		}
	}
	for p := range imports {
		if _, ok := graph[p]; !ok {
			t.Errorf("imports lists %s, which is not a package of the module", p)
		}
	}
	deps := func(p string) map[string]bool {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(p string) {
			for _, d := range graph[p] {
				if !seen[d] {
					seen[d] = true
					walk(d)
				}
			}
		}
		walk(p)
		return seen
	}
	for _, a := range against {
		if deps(a.pkg)[a.dep] {
			t.Errorf("%s depends on %s: %s", a.pkg, a.dep, a.why)
		}
	}
	// probe reads the spec only through plan, never directly.
	if slices.Contains(graph["probe"], "internal/spec") {
		t.Error("probe imports internal/spec: it reads a point's settings from plan")
	}
}
