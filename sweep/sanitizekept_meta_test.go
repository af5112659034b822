package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
)

// The metamorphic property of the kept sanitizer verdicts: a run that
// failed in the intact file never reads back as a pass after one edit a
// crash, a copy or a person could make to the file (a clean line of its
// tool and hash added before or after it, a line duplicated, moved,
// cut or flipped). It may read back as not kept (it runs again), or as
// the failure.

// keptIntact is a committed kept file with every fifth run turned into a
// failure of its tool, and the keys of the failures.
func keptIntact(t testing.TB) ([]string, map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "experiments", "results", "h200", "verdicts", "sanitize-r3", "verdicts-frontier-fused.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	failed := map[string]bool{}
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i%5 == 0 {
			var r keptRun
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			r.Gate.Pass, r.Gate.Detail = false, fmt.Sprintf("%s: 2 error(s): Invalid __global__ read of size 8 bytes", r.Tool)
			nb, _ := json.Marshal(r)
			l = string(nb)
			failed[keptKey(r.Tool, r.Hash)] = true
		}
		lines = append(lines, l)
	}
	return lines, failed
}

// cleanOf is line as a clean run of its tool and hash.
func cleanOf(line string) string {
	var r keptRun
	if json.Unmarshal([]byte(line), &r) != nil {
		return line
	}
	r.Gate.Pass, r.Gate.Detail = true, sanitizer.CleanDetail(r.Tool)
	b, _ := json.Marshal(r)
	return string(b)
}

// keptEdit is one edit of a kept file: it changes lines[i]; j (any
// number) picks a place or a length.
type keptEdit struct {
	name  string
	apply func(lines []string, i, j int) []string
}

var keptCatalogue = []keptEdit{
	{"a clean line after", func(ls []string, i, j int) []string { return append(ls, cleanOf(ls[i])) }},
	{"a clean line before", func(ls []string, i, j int) []string { return append([]string{cleanOf(ls[i])}, ls...) }},
	{"a clean line at another place", func(ls []string, i, j int) []string {
		j %= len(ls)
		return append(ls[:j:j], append([]string{cleanOf(ls[i])}, ls[j:]...)...)
	}},
	{"the line duplicated", func(ls []string, i, j int) []string { return append(ls, ls[i]) }},
	{"the line moved to the end", func(ls []string, i, j int) []string {
		l := ls[i]
		return append(append(ls[:i:i], ls[i+1:]...), l)
	}},
	{"two lines swapped", func(ls []string, i, j int) []string { j %= len(ls); ls[i], ls[j] = ls[j], ls[i]; return ls }},
	{"the line deleted", func(ls []string, i, j int) []string { return append(ls[:i:i], ls[i+1:]...) }},
	{"the line cut", func(ls []string, i, j int) []string { ls[i] = ls[i][:j%len(ls[i])]; return ls }},
	{"pass flipped", func(ls []string, i, j int) []string {
		ls[i] = strings.Replace(ls[i], `"pass":false`, `"pass":true`, 1)
		return ls
	}},
	{"a second pass key", func(ls []string, i, j int) []string {
		ls[i] = strings.Replace(ls[i], `"pass":false`, `"pass":false,"pass":true`, 1)
		return ls
	}},
	{"a line too long before", func(ls []string, i, j int) []string {
		return append([]string{strings.Repeat(" ", results.MaxLineBytes+1)}, ls...)
	}},
}

// keptPasses reads lines as a kept file and returns the keys kept as
// passes.
func keptPasses(t testing.TB, lines []string) map[string]bool {
	dir := t.(interface{ TempDir() string }).TempDir()
	if err := os.WriteFile(filepath.Join(dir, keptFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := openKept(dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	out := map[string]bool{}
	for key, g := range k.runs {
		if g.Pass {
			out[key] = true
		}
	}
	return out
}

// checkKept asserts the property for one mutant.
func checkKept(t testing.TB, failed map[string]bool, mutant []string, what string) {
	for key := range keptPasses(t, mutant) {
		if failed[key] {
			t.Errorf("%s: %s failed in the intact file and reads back as a pass", what, key)
		}
	}
}

func TestKeptNeverMorePermissive(t *testing.T) {
	lines, failed := keptIntact(t)
	if got := keptPasses(t, lines); len(got) != len(lines)-len(failed) {
		t.Fatalf("intact: %d passes of %d lines, %d failed", len(got), len(lines), len(failed))
	}
	for i, l := range lines {
		if !strings.Contains(l, `"pass":false`) {
			continue
		}
		for _, e := range keptCatalogue {
			if e.name == "a line too long before" && i > 0 {
				continue // one is enough: 16 MiB a time
			}
			mutant := e.apply(append([]string(nil), lines...), i, (i+7)%len(lines))
			checkKept(t, failed, mutant, fmt.Sprintf("%s of line %d", e.name, i+1))
		}
	}
}

// FuzzKeptNeverMorePermissive drives the property with one edit of the
// catalogue at random lines and places. (Two edits compose into what is
// out of reach: one that destroys a failure's line, one that adds a clean
// line of its key, and the file holds a clean run and no other.)
func FuzzKeptNeverMorePermissive(f *testing.F) {
	f.Add(uint8(0), uint16(0), uint16(3))
	f.Add(uint8(3), uint16(5), uint16(40))
	f.Add(uint8(7), uint16(10), uint16(17))
	lines, failed := keptIntact(f)
	f.Fuzz(func(t *testing.T, kind uint8, i, j uint16) {
		e := keptCatalogue[int(kind)%len(keptCatalogue)]
		if e.name == "a line too long before" {
			return // TestKeptNeverMorePermissive has it: 16 MiB a time
		}
		mutant := append([]string(nil), lines...)
		k := int(i) % len(mutant)
		mutant = e.apply(mutant, k, int(j))
		checkKept(t, failed, mutant, fmt.Sprintf("%s of line %d (%d)", e.name, k+1, j))
	})
}
