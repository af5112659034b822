package sweep

import (
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
		dir := t.TempDir()
		b, err := json.Marshal(keptRun{Tool: l.tool, Hash: "0123456789abcdef",
			Gate: results.Gate{Kind: results.GateSanitizer, Pass: true, Detail: l.detail}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, keptFile), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		k, err := openKept(dir, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		defer k.close()
		_, ok := k.get(l.tool, "0123456789abcdef")
		return ok
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
