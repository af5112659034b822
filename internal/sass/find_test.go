package sass

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// env is a fake environment for find.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// under accepts only executables below root that exist, so the host's own
// CUDA install (if any) cannot leak into the test.
func under(root string) func(string) bool {
	return func(p string) bool {
		return strings.HasPrefix(p, root) && isExecutable(p)
	}
}

func writeTool(t *testing.T, dir, name, script string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	a, b, home := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "cuda")
	nvA := writeTool(t, a, "nvdisasm", "")
	cuB := writeTool(t, b, "cuobjdump", "")
	cuHome := writeTool(t, filepath.Join(home, "bin"), "cuobjdump", "")
	// A non-executable file of the right name is not a tool.
	if err := os.WriteFile(filepath.Join(root, "cuobjdump"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{"", root, a, b}, string(os.PathListSeparator))

	for _, c := range []struct {
		name string
		vars map[string]string
		want string
	}{
		// PATH order wins over the tool preference: a's nvdisasm before b's cuobjdump.
		{"path order", map[string]string{"PATH": path, "CUDA_HOME": home}, nvA},
		{"path only b", map[string]string{"PATH": b}, cuB},
		{"cuda home", map[string]string{"PATH": root, "CUDA_HOME": home}, cuHome},
	} {
		got, err := find(env(c.vars), under(root))
		if err != nil || got != c.want {
			t.Errorf("%s: find = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	_, err := find(env(map[string]string{"PATH": root}), under(root))
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("find with no tool: err = %v, want ErrNotFound", err)
	}
}

func TestDisassembleRunsTool(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("fake tools are shell scripts")
	}
	dir := t.TempDir()
	// Each fake echoes the file it was given, after checking its flag, so
	// the test sees both the arguments and the bytes written.
	cu := writeTool(t, dir, "cuobjdump", `[ "$1" = -sass ] || { echo "bad flag $1" >&2; exit 3; }; cat "$2"`)
	nv := writeTool(t, filepath.Join(dir, "nv"), "nvdisasm", `[ "$1" = -c ] || { echo "bad flag $1" >&2; exit 3; }; cat "$2"`)
	bad := writeTool(t, filepath.Join(dir, "bad"), "cuobjdump", `echo "cuobjdump fatal   : Could not open input file" >&2; exit 1`)

	cubin := []byte("\x7fELF fake cubin")
	for _, tool := range []string{cu, nv} {
		out, err := Disassemble(tool, cubin)
		if err != nil || out != string(cubin) {
			t.Errorf("Disassemble(%s) = %q, %v; want the CUBIN bytes back", tool, out, err)
		}
	}
	if _, err := Disassemble(bad, cubin); err == nil || !strings.Contains(err.Error(), "Could not open input file") {
		t.Errorf("failing tool: err = %v, want the tool's message", err)
	}
	if _, err := Disassemble(filepath.Join(dir, "objdump"), cubin); err == nil || !strings.Contains(err.Error(), "neither cuobjdump nor nvdisasm") {
		t.Errorf("unknown tool: err = %v", err)
	}
	if _, err := Disassemble(cu, nil); err == nil {
		t.Error("empty CUBIN: no error")
	}
}

// TestDisassembleRealCubin needs a CUDA toolkit of release 13 or later:
// it disassembles the CUBIN behind testdata/d2.sass (built by CUDA 13.0,
// testdata/README.md) and checks the analysis agrees with the saved
// listing. An older disassembler refuses the newer CUBIN's format, which
// says nothing about this package: the test skips, naming the release.
func TestDisassembleRealCubin(t *testing.T) {
	tool, err := Find()
	if err != nil {
		t.Skipf("no CUDA disassembler installed: %v", err)
	}
	if v, err := exec.Command(tool, "--version").Output(); err == nil {
		if m := regexp.MustCompile(`release (\d+)\.`).FindSubmatch(v); m != nil {
			if major, _ := strconv.Atoi(string(m[1])); major < 13 {
				t.Skipf("%s is CUDA release %d; testdata/d2.cubin was built by CUDA 13.0", tool, major)
			}
		}
	}
	cubin, err := os.ReadFile(filepath.Join("testdata", "d2.cubin"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := Disassemble(tool, cubin)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	want := AnalyzeChain(parseFile(t, "d2.sass")["attn_partial"])
	if got := AnalyzeChain(fs["attn_partial"]); got != want {
		t.Errorf("%s: %+v, saved listing %+v", tool, got, want)
	}
}
