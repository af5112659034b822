package sanitizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
// the first line of each finding kept once, backtraces, banners and
// warnings dropped; a log without a summary is incomplete, which fails.
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
		}, true},
		{Synccheck, "synccheck-clean.log", 0, true, nil, false},
		{Initcheck, "initcheck-killed.log", 0, false, []string{"Uninitialized __global__ memory read of size 4 bytes"}, true},
	} {
		rep := parseFile(t, c.tool, c.file)
		if rep.Errors != c.errors || rep.Complete != c.complete || !slices.Equal(rep.Findings, c.findings) || rep.Failed() != c.failed {
			t.Errorf("%s: %+v (failed %v); want %d errors, complete %v, findings %q, failed %v",
				c.file, rep, rep.Failed(), c.errors, c.complete, c.findings, c.failed)
		}
		d := rep.Detail()
		if !strings.HasPrefix(d, string(c.tool)+": ") || (c.failed && c.complete && !strings.Contains(d, c.findings[0])) {
			t.Errorf("%s: detail %q", c.file, d)
		}
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
	if !slices.Equal(a[:4], []string{"--tool", "racecheck", "--log-file", "/tmp/x.log"}) || !slices.Contains(a, "kns=ktune_") {
		t.Errorf("args %q", a)
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
