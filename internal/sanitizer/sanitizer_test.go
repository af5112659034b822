package sanitizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/kernels"
)

func parseFile(t *testing.T, tool Tool, name string) Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(tool, f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestParse reads a report of each kind: errors counted from the summary
// (the larger of two summary lines, the printed limit notwithstanding),
// the first line of each finding kept once, racecheck's warning-level
// hazards among them, backtraces and banners dropped; a log without a
// summary of its tool's kind is incomplete, and one with a warning of the
// tool's own is not clean: neither passes.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		tool     Tool
		file     string
		errors   int
		complete bool
		findings []string
		failed   bool
	}{
		{Memcheck, "memcheck-oob.log", 33, true, []string{
			"Invalid __global__ write of size 4 bytes",
			`Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuStreamSynchronize.`,
		}, true},
		{Racecheck, "racecheck-race.log", 1, true, []string{
			"Error: Race reported between Write access at attn_partial+0x610 in race.cu:48",
			"Warning: Race reported between Read access at attn_partial+0x300 in race.cu:40",
		}, true},
		// A warning-level hazard alone (a warp assumed to run in step)
		// fails; a warning of the tool's own is no finding, and no pass.
		{Racecheck, "racecheck-warning.log", 0, true, []string{
			"Warning: Race reported between Write access at attn_combine+0x2a0 in warp.cu:31",
		}, true},
		{Memcheck, "memcheck-tool-warning.log", 0, true, nil, true},
		{Synccheck, "synccheck-clean.log", 0, true, nil, false},
		{Racecheck, "racecheck-clean.log", 0, true, nil, false},
		// Another tool's summary: racecheck's kind in memcheck's report,
		// or the others' in racecheck's, is a run of another tool.
		{Memcheck, "racecheck-clean.log", 0, false, nil, true},
		{Racecheck, "synccheck-clean.log", 0, false, nil, true},
		{Initcheck, "initcheck-killed.log", 0, false, []string{"Uninitialized __global__ memory read of size 4 bytes"}, true},
		// The H200's: the sanitizer's own failure, counted as an error,
		// and a clean summary of a program that ended with an error.
		{Racecheck, "racecheck-internal.log", 1, true, nil, true},
		{Initcheck, "initcheck-target-failed.log", 0, true, nil, true},
	} {
		rep := parseFile(t, c.tool, c.file)
		if rep.Errors != c.errors || rep.Complete != c.complete || !slices.Equal(rep.Findings, c.findings) || rep.Clean() == c.failed {
			t.Errorf("%s: %+v (failed %v); want %d errors, complete %v, findings %q, failed %v",
				c.file, rep, !rep.Clean(), c.errors, c.complete, c.findings, c.failed)
		}
		d := rep.Detail()
		if !strings.HasPrefix(d, string(c.tool)+": ") || (len(c.findings) > 0 && c.complete && !strings.Contains(d, c.findings[0])) {
			t.Errorf("%s: detail %q", c.file, d)
		}
	}
	// A hazard fails the kernel; the tool's warning decides nothing.
	if rep := parseFile(t, Racecheck, "racecheck-warning.log"); !rep.Found() || rep.Hazards != 1 ||
		!strings.Contains(rep.Detail(), "0 error(s) and 1 warning-level hazard(s)") {
		t.Errorf("a warning-level hazard: found %v, %d hazards, detail %q", rep.Found(), rep.Hazards, rep.Detail())
	}
	if rep := parseFile(t, Racecheck, "synccheck-clean.log"); rep.Found() ||
		rep.Detail() != `racecheck: the report's summary is another tool's ("ERROR SUMMARY: 0 errors"): racecheck may not have run` {
		t.Errorf("another tool's summary: found %v, detail %q", rep.Found(), rep.Detail())
	}
	if rep := parseFile(t, Memcheck, "memcheck-tool-warning.log"); rep.Found() || rep.Clean() ||
		rep.Detail() != "memcheck: no errors, but compute-sanitizer warned: Warning: the tool could not follow every launch of the program" {
		t.Errorf("a warning of the tool's: found %v, clean %v, detail %q", rep.Found(), rep.Clean(), rep.Detail())
	}
}

func TestParseTools(t *testing.T) {
	for in, want := range map[string][]Tool{
		"true":                Tools,
		"all":                 Tools,
		"racecheck":           {Racecheck},
		"memcheck, initcheck": {Memcheck, Initcheck},
		"memcheck,memcheck":   {Memcheck},
	} {
		got, err := ParseTools(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseTools(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseTools("memchek"); err == nil || !strings.Contains(err.Error(), `"memchek"`) {
		t.Errorf("a misspelt tool: %v", err)
	}
}

func TestArgsAndBinary(t *testing.T) {
	a := Args(Racecheck, "/tmp/x.log")
	if !slices.Equal(a[:4], []string{"--tool", "racecheck", "--log-file", "/tmp/x.log"}) {
		t.Errorf("args %q", a)
	}
	// Each of ktune's kernels excluded by its exact name, nothing by a
	// substring or a pattern, which would reach an engine's kernels too.
	var excluded []string
	for i, arg := range a {
		if arg == "--kernel-name-exclude" && i+1 < len(a) {
			name, ok := strings.CutPrefix(a[i+1], "kne=")
			if !ok {
				t.Errorf("an exclusion not by exact name: %q", a[i+1])
			}
			excluded = append(excluded, name)
		}
	}
	if !slices.Equal(excluded, kernels.Util()) {
		t.Errorf("excluded %q, want util.cu's %q", excluded, kernels.Util())
	}
	env := map[string]string{BinaryEnv: "/opt/cs/compute-sanitizer"}
	if p, err := Binary(func(k string) string { return env[k] }); err != nil || p != "/opt/cs/compute-sanitizer" {
		t.Errorf("from %s: %q, %v", BinaryEnv, p, err)
	}
	if _, err := os.Stat("/usr/local/cuda/bin/compute-sanitizer"); err == nil {
		return // installed here: "none installed" cannot be tested
	}
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	env = map[string]string{"CUDA_HOME": dir}
	if _, err := Binary(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), BinaryEnv) {
		t.Errorf("none installed: %v", err)
	}
}

// TestParseToolFailures: compute-sanitizer's own failure and the failure
// of the program under it are neither a finding nor a clean run: the
// report found nothing (Found), is not clean, and says which failed.
func TestParseToolFailures(t *testing.T) {
	rep := parseFile(t, Racecheck, "racecheck-internal.log")
	if rep.Found() || rep.Clean() || !rep.TargetFailed ||
		!slices.Equal(rep.Internal, []string{"Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception."}) {
		t.Errorf("internal error: %+v (found %v, clean %v)", rep, rep.Found(), rep.Clean())
	}
	if d := rep.Detail(); !strings.HasPrefix(d, "racecheck: compute-sanitizer failed: Internal Sanitizer Error") {
		t.Errorf("detail %q", d)
	}
	rep = parseFile(t, Initcheck, "initcheck-target-failed.log")
	if rep.Found() || rep.Clean() || !rep.TargetFailed {
		t.Errorf("target failed: %+v", rep)
	}
	if d := rep.Detail(); !strings.Contains(d, "the program under it ended with an error") {
		t.Errorf("detail %q", d)
	}
	// A summary of no errors does not outweigh an internal error line.
	rep, err := Parse(Memcheck, strings.NewReader("========= COMPUTE-SANITIZER\n========= Internal Sanitizer Error: out of shadow memory\n========= ERROR SUMMARY: 0 errors\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean() || rep.Found() {
		t.Errorf("internal error under a clean summary: %+v", rep)
	}
}

// TestParseDamageNeverCleans is the property behind a pass: a report that
// is not clean never becomes clean by damage. Every report of testdata,
// cut after any line, or with a tool or program failure line put in at
// any place, is clean only if the whole report is; and a finding line put
// in anywhere makes it fail.
func TestParseDamageNeverCleans(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "*.log"))
	if err != nil || len(names) == 0 {
		t.Fatalf("testdata: %v %v", names, err)
	}
	damage := []string{
		"========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception.",
		"========= Target application returned an error",
		"========= Error: process didn't terminate successfully",
		"========= Invalid __global__ read of size 16 bytes",
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		tool := Tool(strings.SplitN(filepath.Base(name), "-", 2)[0])
		damage := damage
		// A summary of another tool's kind: a report of another tool.
		if tool == Racecheck {
			damage = append(damage, "========= ERROR SUMMARY: 0 errors")
		} else {
			damage = append(damage, "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
		}
		lines := strings.SplitAfter(string(b), "\n")
		parse := func(text string) Report {
			rep, err := Parse(tool, strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		whole := parse(string(b)).Clean()
		for i := range lines {
			if parse(strings.Join(lines[:i], "")).Clean() && !whole {
				t.Errorf("%s cut after line %d is clean, the whole report is not", name, i)
			}
			for _, d := range damage {
				with := strings.Join(lines[:i], "") + d + "\n" + strings.Join(lines[i:], "")
				if parse(with).Clean() {
					t.Errorf("%s with %q before line %d is clean", name, d, i)
				}
			}
		}
	}
}

// TestSkipped: exactly the names the sanitizer excludes (Args) are
// skipped; a name that only shares ktune's prefix, holds it, or is a
// C++ symbol is checked.
func TestSkipped(t *testing.T) {
	for _, name := range kernels.Util() {
		for _, as := range []string{name, "&" + name, " " + name + " ", "& " + name} {
			if !Skipped(as) {
				t.Errorf("%q is excluded from the sanitizer, but Skipped says it is checked", as)
			}
		}
	}
	for _, name := range []string{"ktune_tt_partial", "ktune_tt_combine", "my_ktune_combine", "decode<ktune_params>",
		"ktune_fill2", "ktune_fill<float>", "_Z10ktune_fillv", "ktune_", "", "KTUNE_FILL"} {
		if Skipped(name) {
			t.Errorf("%q is not one of util.cu's kernels, but Skipped says the sanitizer skips it", name)
		}
	}
}
