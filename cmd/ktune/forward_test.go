package main

import (
	"strings"
	"testing"
)

// A kernel whose template parameters are named like ktune's defines
// builds only sealed (forward:), with its axes as template arguments;
// without forward the plan warns about the collision and NVRTC rejects
// it, at the template line.
func TestCheckForwardedDefines(t *testing.T) {
	t.Parallel()
	needNVRTC(t)
	const launch = `launches: [{entry: "partial<{SPLITS}, {head_dim}, {PARTITION_SIZE}>", grid: [1, heads], block: [head_dim], args: [q, out, heads]}]`
	spec := buildCheckSpec(t,
		"{name: sealed, kernel: TESTDATA/collide.cu, forward: {}, defines: {PARTITION_SIZE: [256, 512]}, "+launch+"}",
		"{name: open, kernel: TESTDATA/collide.cu, defines: {PARTITION_SIZE: [256]}, "+launch+"}")
	stdout, stderr, code := runCmd("check", spec, "--cache", warmR4Cache(t))
	if code != exitBuild {
		t.Errorf("exit %d, want %d\n%s%s", code, exitBuild, stdout, stderr)
	}
	for _, w := range []string{
		"ok     collide.cu", "partial<32, 128, 256>: ", "partial<32, 128, 512>: ",
		"FAILED collide.cu", `expected a "," or ">"`,
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	if strings.Count(stdout, "ok     collide.cu") != 2 {
		t.Errorf("want two sealed kernels built (PARTITION_SIZE 256 and 512):\n%s", stdout)
	}
	for _, w := range []string{"variant open: define SPLITS is also an identifier of the kernel's sources (collide.cu: \"int SPLITS\")"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("warnings lack %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "variant sealed: define") {
		t.Errorf("the sealed variant is warned about a define it does not get:\n%s", stderr)
	}
}
