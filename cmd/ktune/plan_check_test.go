package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// engineTree is the ${NAME} of an engine's tree in a spec.
var engineTree = regexp.MustCompile(`\$\{[A-Z_][A-Z0-9_]*\}`)

func writeSpec(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const checkSpec = `name: t
landed: {variant: d2, defines: {SPLITS: 32}}
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
axes:
  nkv: [1, 512]
  SPLITS: [32]
variants:
  - {name: d2, kernel: d2, block: [%s]}
`

// A launch no GPU accepts is a spec mistake found while planning, at the
// variant's line, not a failure on the device after compiling.
func TestPlanRefusesImpossibleLaunch(t *testing.T) {
	for _, block := range []string{"100000, 1, 1", "32, 32, 2", "1, 1, 65"} {
		path := writeSpec(t, fmt.Sprintf(checkSpec, block))
		err := run(new(strings.Builder), new(strings.Builder), []string{"plan", path})
		if exitCode(err) != exitUsage || !strings.Contains(fmt.Sprint(err), "spec.yaml:9:5:") {
			t.Errorf("block [%s]: exit %d, err %v; want %d at spec.yaml:9:5", block, exitCode(err), err, exitUsage)
		}
	}
	if _, _, code := runCmd("plan", writeSpec(t, fmt.Sprintf(checkSpec, "1024, 1, 1"))); code != exitOK {
		t.Errorf("block [1024, 1, 1]: exit %d, want %d", code, exitOK)
	}
}

func TestPlanArch(t *testing.T) {
	for arch, want := range map[string]int{"sm_bogus": exitUsage, "sm_9": exitUsage, "compute_90": exitUsage, "sm_90": exitOK, "sm_90a": exitOK, "sm_100f": exitOK} {
		if _, stderr, code := runCmd("plan", "--arch", arch, "../../experiments/slice.yaml"); code != want {
			t.Errorf("--arch %s: exit %d, want %d: %s", arch, code, want, stderr)
		}
	}
}

// plan --count agrees with the full plan on every committed spec, and
// counts a million points without building them.
func TestPlanCount(t *testing.T) {
	t.Parallel()
	specs, _ := filepath.Glob("../../experiments/*.yaml")
	specs = append(specs, "../../internal/spec/testdata/full.yaml")
	for _, s := range specs {
		// A spec of an engine's own tree (${VLLM_ROOT} …) plans only where
		// the tree is given (plan's TestEngineSpecsPlan skips them too).
		if text, err := os.ReadFile(s); err != nil {
			t.Fatal(err)
		} else if m := engineTree.Find(text); m != nil {
			t.Logf("%s: an engine's own tree (%s): not planned here", s, m)
			continue
		}
		full, stderr, code := runCmd("plan", s)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", s, code, stderr)
		}
		var want string
		for _, l := range strings.Split(full, "\n") {
			if strings.HasPrefix(l, "points: ") {
				want = l
			}
		}
		got, _, code := runCmd("plan", "--count", s)
		if code != exitOK || !strings.HasPrefix(got, want+"\n") || want == "" {
			t.Errorf("%s: --count %q, plan %q", s, got, want)
		}
	}
	var nkv, splits []string
	for i := 1; i <= 1000; i++ {
		nkv = append(nkv, fmt.Sprint(i))
	}
	for i := 1; i <= 500; i++ {
		splits = append(splits, fmt.Sprint(i))
	}
	big := writeSpec(t, fmt.Sprintf(`name: big
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
axes:
  nkv: [%s]
  SPLITS: [%s]
variants:
  - {name: d2, kernel: d2}
  - {name: r4, kernel: r4}
`, strings.Join(nkv, ", "), strings.Join(splits, ", ")))
	start := time.Now()
	got, stderr, code := runCmd("plan", "--count", big)
	if code != exitOK || !strings.HasPrefix(got, "points: 1000000 (d2 500000, r4 500000)\n") {
		t.Errorf("a million points: exit %d, %q %s", code, got, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("--count took %v", d)
	}
}

// An unknown candidate is named with the variants the records hold.
func TestGateUnknownCandidateListsVariants(t *testing.T) {
	err := run(new(strings.Builder), new(strings.Builder), []string{"gate", "--candidate", "nosuch", h200Slice})
	if exitCode(err) != exitError || !strings.Contains(fmt.Sprint(err), "d2, r4") {
		t.Errorf("exit %d, err %v; want the variants d2, r4 listed", exitCode(err), err)
	}
}

// TestAxisFlag: --axis narrows plan's points; a mistake in it exits 2 with
// file:line:col at the axis, and a malformed or repeated flag is a usage
// error.
func TestAxisFlag(t *testing.T) {
	stdout, stderr, code := runCmd("plan", "../../experiments/slice.yaml", "--count", "--axis", "nkv=2048,8192", "--axis", "SPLITS=32")
	if code != exitOK || !strings.Contains(stdout, "points: 4 (r4 2, d2 2)") {
		t.Errorf("narrowed: exit %d, %q %q", code, stdout, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--axis", "nkv=0"}, "slice.yaml:12:8: axes.nkv (--axis): 0 is not a context length"},
		{[]string{"--axis", "WARPS=2"}, "--axis WARPS: the spec has no axis WARPS"},
	} {
		err := run(new(strings.Builder), new(strings.Builder), append([]string{"plan", "../../experiments/slice.yaml"}, tc.args...))
		if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: exit %d, %v; want %d and %q", tc.args, exitCode(err), err, exitUsage, tc.want)
		}
	}
	for _, args := range [][]string{{"--axis", "nkv"}, {"--axis", "nkv=1", "--axis", "nkv=2"}} {
		if _, _, code := runCmd(append([]string{"plan", "../../experiments/slice.yaml"}, args...)...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestAxisFlagNotWithFrom: tune --from exports recorded results and plans
// nothing, so an --axis there is refused rather than ignored.
func TestAxisFlagNotWithFrom(t *testing.T) {
	err := run(new(strings.Builder), new(strings.Builder), []string{"tune", "--from", h200Slice, "-o", t.TempDir(), "--axis", "nkv=512"})
	if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), "--axis measures, --from only exports") {
		t.Errorf("tune --from --axis: exit %d, %v", exitCode(err), err)
	}
}

// ktune plan lists what the spec waives for its gates, with the variants
// it applies to, before any sweep: an input set's waiver with its reason,
// and none for a spec that waives nothing.
func TestPlanSaysWaivers(t *testing.T) {
	base := `name: t
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
axes:
  nkv: [512]
  SPLITS: [32]
variants:
  - {name: d2, kernel: d2}
  - {name: d2b, kernel: d2, defines: {NR: 1}}
`
	out, errOut, code := runCmd("plan", writeSpec(t, base))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "waived:") {
		t.Errorf("a spec that waives nothing lists waivers:\n%s", out)
	}
	waived := base + "gates:\n  inputs:\n    subnormal: {nmse: 1e-4, reason: \"partials in f16\"}\n"
	out, errOut, code = runCmd("plan", writeSpec(t, waived))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "waived: "); n != 1 || !strings.Contains(out, "partials in f16") || !strings.Contains(out, "(d2, d2b)\n") {
		t.Errorf("want one waiver line naming the reason and both variants, got %d:\n%s", n, out)
	}
}
