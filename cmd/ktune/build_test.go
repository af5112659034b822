package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A source with host code (<iostream>) builds with the engine's own
// command (nvcc) and its C++-named entry is found in the CUBIN; the same
// source under NVRTC cannot open <iostream>; a build command that fails
// fails the kernel with the command's output; a second check finds the
// build in the cache.
func TestCheckEngineBuild(t *testing.T) {
	t.Parallel()
	needNVRTC(t)
	if _, err := exec.LookPath("nvcc"); err != nil {
		t.Skipf("no nvcc on this machine: %v", err)
	}
	const launch = `launches: [{entry: "eng::scale_rows<float, {VEC}>", grid: [1], block: [32], args: [q, out, heads, scale]}]`
	spec := buildCheckSpec(t,
		`{name: nvcc, kernel: TESTDATA/hostcode.cu, defines: {VEC: [4]}, build: {command: [nvcc, -cubin, "-arch={arch}", -O3, -MD, -MF, "{dep}", "-DVEC_UNUSED={VEC}", -o, "{out}", TESTDATA/hostcode.cu]}, `+launch+`}`,
		`{name: nvrtc, kernel: TESTDATA/hostcode.cu, defines: {VEC: [4]}, `+launch+`}`,
		`{name: header, kernel: TESTDATA/headeronly.cuh, defines: {ROWS: [8]}, host_headers: [framework/host.h], build: {command: [nvcc, -cubin, "-arch={arch}", "-I{host}", -o, "{out}", "{instantiate}"]}, launches: [{entry: "eng::rows_kernel<float, {ROWS}>", grid: [1], block: [32], args: [q, out, heads]}]}`,
		`{name: layoutbuild, kernel: TESTDATA/layout.cu, build: {command: [nvcc, -cubin, "-arch={arch}", -o, "{out}", "{instantiate}"]}, structs: {fd: {fields: [{name: d, arg: "u32:8"}, {name: m, arg: "u32:fastdiv_m(8)"}, {name: s, arg: "u32:fastdiv_s(8)"}, {name: a, arg: "u32:fastdiv_a(8)"}]}, params: {type: "eng::params<float>", fields: [{name: out, arg: out}, {name: heads, arg: heads}, {name: head_dim, arg: head_dim}, {name: kv_heads, arg: kv_heads}, {name: scale, arg: scale}, {name: d, arg: "i64:0"}, {name: page, struct: fd}, {name: n, arg: "i32:capacity"}]}}, launches: [{entry: step, grid: [1], block: [32], args: [{struct: params}]}]}`,
		`{name: nocompiler, kernel: TESTDATA/hostcode.cu, build: {command: [ktune-no-such-compiler, "-o", "{out}"]}, launches: [{entry: k, grid: [1], block: [32], args: [q, out]}]}`,
		`{name: broken, kernel: TESTDATA/hostcode.cu, defines: {VEC: [4]}, build: {command: [nvcc, -cubin, -DBROKEN=1, "--no-such-flag", -o, "{out}", TESTDATA/hostcode.cu]}, `+launch+`}`)
	cache := warmR4Cache(t)
	stdout, stderr, code := runCmd("check", spec, "--cache", cache)
	if code != exitBuild {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitBuild, stdout, stderr)
	}
	for _, w := range []string{
		"ok     hostcode.cu artifact-", "[sm_90, prebuilt cubin]", "eng::scale_rows<float, 4> (_ZN3eng10scale_rowsIfLi4EEEvPKT_PS1_if): ",
		`could not open source file "iostream"`,
		"the engine's build failed (its output below)", "--no-such-flag",
		"eng::rows_kernel<float, 8> (_ZN3eng11rows_kernelIfLi8EEEvPKT_PS1_i): ",
		// The layout probe built by the variant's own command (nvcc).
		"FAILED layout.cu", "field head_dim is declared at offset 12 (4 bytes), but the type has it at offset 16 (4 bytes)",
		"NEEDS ITS BUILD'S COMPILER hostcode.cu", "the build of hostcode.cu (not run: ktune-no-such-compiler is not on this machine)", "1 need their build's compiler",
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	// A build says when it starts and what it took: an engine's build can
	// run for minutes.
	for _, w := range []string{"building hostcode.cu (variant nvcc): nvcc -cubin -arch=sm_90 -O3", "built hostcode.cu in ", "build failed hostcode.cu in "} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	again, againErr, _ := runCmd("check", spec, "--cache", cache)
	if !strings.Contains(again, "ok     hostcode.cu artifact-") {
		t.Errorf("the second check lost the build:\n%s", again)
	}
	if strings.Contains(againErr, "building hostcode.cu (variant nvcc)") {
		t.Errorf("the second check built again:\n%s", againErr)
	}
}

// TestSweepBuildsForTheDevice: a sweep runs a variant's build command for
// the device's architecture only. The plan drafted before the device is
// open (to validate the spec) builds nothing: it once ran every build
// with an empty {arch}, and printed each as failed.
func TestSweepBuildsForTheDevice(t *testing.T) {
	log := filepath.Join(t.TempDir(), "builds.log")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	spec := buildCheckSpec(t, `{name: eng, kernel: TESTDATA/hostcode.cu, build: {command: [bash, -c, "echo arch={arch} >> `+log+`; exit 1", "{out}"]}, launches: [{entry: "eng::scale_rows<float, 4>", grid: [1], block: [32], args: [q, out, heads, scale]}]}`)
	var stdout, stderr bytes.Buffer
	serr := runSweep(context.Background(), &stdout, &stderr, []string{spec, "-o", t.TempDir(), "--only", "variant=eng"}, tuneDeps(&modelled{}))
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the build command never ran: %v (sweep: %v)\nstdout:\n%s\nstderr:\n%s", err, serr, stdout.String(), stderr.String())
	}
	lines := strings.Fields(string(got))
	for _, l := range lines {
		if l != "arch=sm_90" {
			t.Errorf("a build ran with %q, not the device's sm_90 (all: %v)", l, lines)
		}
	}
	if strings.Contains(stderr.String(), "-arch= ") || strings.Count(stderr.String(), "building hostcode.cu") != len(lines) {
		t.Errorf("stderr names builds other than the %d run for the device:\n%s", len(lines), stderr.String())
	}
}
