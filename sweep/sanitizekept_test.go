package sweep

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
)

// TestKeptPassContradicted: a kept line that says pass but whose detail
// is any report's other than a clean one of its own tool (every report of
// internal/sanitizer's testdata that is not clean, and a clean one of
// another tool) does not stand for a run; the clean detail of its own
// tool does.
func TestKeptPassContradicted(t *testing.T) {
	type line struct {
		tool   sanitizer.Tool
		detail string
	}
	lines := []line{{sanitizer.Memcheck, "racecheck: no errors"}, {sanitizer.Racecheck, "memcheck: no errors"},
		{sanitizer.Memcheck, "memcheck: no errors "}, {sanitizer.Memcheck, "memcheck: no errors; 2 error(s)"}}
	reports, err := filepath.Glob(filepath.Join("..", "internal", "sanitizer", "testdata", "*.log"))
	if err != nil || len(reports) == 0 {
		t.Fatalf("no reports to read: %v", err)
	}
	for _, path := range reports {
		tool := sanitizer.Tool(strings.SplitN(filepath.Base(path), "-", 2)[0])
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := sanitizer.Parse(tool, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() {
			lines = append(lines, line{tool, rep.Detail()})
		}
	}
	if len(lines) < 8 {
		t.Fatalf("only %d contradicted lines to try", len(lines))
	}
	keeps := func(l line) bool {
		b, err := json.Marshal(keptRun{Tool: l.tool, Hash: "0123456789abcdef",
			Gate: results.Gate{Kind: results.GateSanitizer, Pass: true, Detail: l.detail}})
		if err != nil {
			t.Fatal(err)
		}
		return keptLines(t, string(b))[keptKey(l.tool, "0123456789abcdef")]
	}
	for _, l := range lines {
		if keeps(l) {
			t.Errorf("a kept %s pass with detail %q stands for a run", l.tool, l.detail)
		}
	}
	for _, tool := range sanitizer.Tools {
		if !keeps(line{tool, string(tool) + ": no errors"}) {
			t.Errorf("a clean %s pass is not kept", tool)
		}
	}
}

// keptLines reads a kept file of the given lines with openKept and says
// which runs it keeps (keptKey).
func keptLines(t *testing.T, lines ...string) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, keptFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := openKept(dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	got := map[string]bool{}
	for key := range k.runs {
		got[key] = true
	}
	return got
}

// TestKeptLineDamaged: what put never writes, and encoding/json forgives
// (a key twice with the later winning, a re-cased key, a null where the
// writer omits), never stands for a run; the same line intact does.
func TestKeptLineDamaged(t *testing.T) {
	const intact = `{"tool":"memcheck","hash":"%s","gate":{"kind":"sanitizer","nkv":2048,"pass":true,"seed":1,"first_diff":-1,"detail":"memcheck: no errors"},"kernel":"k","gated":true}`
	line := func(hash, from, to string) string {
		return strings.Replace(strings.Replace(intact, "%s", hash, 1), from, to, 1)
	}
	damaged := []string{
		line("a0", `"pass":true`, `"pass":false,"pass":true`),
		line("a1", `"pass":true`, `"pass":false,"Pass":true`),
		line("a2", `"tool":"memcheck"`, `"Tool":"memcheck"`),
		line("a3", `"detail":"memcheck: no errors"`, `"detail":"memcheck: 3 error(s)","detail":"memcheck: no errors"`),
		line("a4", `"gated":true`, `"gated":null`),
		line("a5", `"hash":"a5"`, `"hash":"a5","hash":"a5"`),
	}
	got := keptLines(t, append(damaged, line("ok", "", ""))...)
	for _, l := range damaged {
		var r keptRun
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s: %v (the damage is meant to read back)", l, err)
		}
		if got[keptKey(sanitizer.Memcheck, r.Hash)] {
			t.Errorf("a damaged line stands for a run: %s", l)
		}
	}
	if !got[keptKey(sanitizer.Memcheck, "ok")] {
		t.Errorf("the intact line is not kept")
	}
}

// TestKeptCommitted: every line of the kept verdicts committed under
// experiments/results (what run-sanitize-all.sh's KEPT names) reads back
// as a run, so that a resumed sanitize does not run them again.
func TestKeptCommitted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "experiments", "results", "h200", "verdicts", "*", "verdicts*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed kept verdicts: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		runs := map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 1<<16), 1<<24)
		for sc.Scan() {
			var r keptRun
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			lines = append(lines, sc.Text())
			runs[keptKey(r.Tool, r.Hash)] = true
		}
		got := keptLines(t, lines...)
		for run := range runs {
			if !got[run] {
				t.Errorf("%s: the run %s is not kept", file, run)
			}
		}
	}
}

// keptGates reads a kept file of the given lines with openKept and
// returns the gate kept for each key and what was logged.
func keptGates(t *testing.T, lines ...string) (map[string]results.Gate, string, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, keptFile)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	k, err := openKept(dir, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	return k.runs, log.String(), path
}

// TestKeptDisagreeingLines: a memcheck failure and a clean line of the
// same tool and hash, in either order, leave the failure standing, with a
// warning naming the file and both lines; the last line no longer wins.
func TestKeptDisagreeingLines(t *testing.T) {
	const pass = `{"tool":"memcheck","hash":"h1","gate":{"kind":"sanitizer","nkv":2048,"pass":true,"seed":1,"first_diff":-1,"detail":"memcheck: no errors"},"kernel":"k","gated":true}`
	const fail = `{"tool":"memcheck","hash":"h1","gate":{"kind":"sanitizer","nkv":2048,"pass":false,"seed":1,"first_diff":-1,"detail":"memcheck: 915 error(s): Invalid __global__ read of size 8 bytes"},"kernel":"k","gated":true}`
	const other = `{"tool":"racecheck","hash":"h1","gate":{"kind":"sanitizer","nkv":2048,"pass":true,"seed":1,"first_diff":-1,"detail":"racecheck: no errors"},"kernel":"k","gated":true}`
	for _, c := range []struct {
		lines []string
		where string
	}{
		{[]string{fail, other, pass}, "lines 1 (fail) and 3 (pass)"},
		{[]string{pass, other, fail}, "lines 3 (fail) and 1 (pass)"},
	} {
		runs, log, path := keptGates(t, c.lines...)
		if g := runs[keptKey(sanitizer.Memcheck, "h1")]; g.Pass {
			t.Errorf("a memcheck failure and a pass of one hash: kept as a pass (%q)", g.Detail)
		}
		if g, ok := runs[keptKey(sanitizer.Racecheck, "h1")]; !ok || !g.Pass {
			t.Errorf("another tool's pass of the hash is not kept: %+v", g)
		}
		if !strings.Contains(log, path+": "+c.where) || !strings.Contains(log, "the failure stands") {
			t.Errorf("the warning does not name %s: %s", c.where, log)
		}
	}
	// Lines that agree warn of nothing.
	if _, log, _ := keptGates(t, pass, pass); strings.Contains(log, "disagree") {
		t.Errorf("two passes warned: %s", log)
	}
}

// TestKeptLongLine: a kept line longer than results.MaxLineBytes is read
// past, not held, and named by file and line; the lines around it stand.
func TestKeptLongLine(t *testing.T) {
	const pass = `{"tool":"memcheck","hash":"%s","gate":{"kind":"sanitizer","nkv":2048,"pass":true,"seed":1,"first_diff":-1,"detail":"memcheck: no errors"},"kernel":"k","gated":true}`
	long := strings.Replace(pass, `"k"`, `"`+strings.Repeat("x", results.MaxLineBytes+1<<20)+`"`, 1)
	runs, log, path := keptGates(t, strings.Replace(pass, "%s", "a", 1), long, strings.Replace(pass, "%s", "b", 1))
	if len(runs) != 2 {
		t.Errorf("kept %d runs, want the 2 short lines'", len(runs))
	}
	if !strings.Contains(log, path+":2: a line of") {
		t.Errorf("the long line is not named by file and line: %.200s", log)
	}
}
