package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// Duplicate points become one warning line per kind, with a count, on
// the writer given for warnings; the terminal report carries none.
func TestWarningsSummarised(t *testing.T) {
	t.Parallel()
	rep, err := Build(allH200(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for _, w := range rep.Warnings {
		if w.Kind == WarnDuplicate {
			dups++
		}
	}
	if dups < 2 {
		t.Fatalf("%d duplicate warnings; the committed results repeat slice.jsonl", dups)
	}
	var warn, text bytes.Buffer
	if err := rep.WriteWarnings(&warn); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(warn.String()), "\n")
	if len(lines) != 1 {
		t.Errorf("warnings take %d lines, want one:\n%s", len(lines), warn.String())
	}
	if !strings.HasPrefix(lines[0], "warning: "+strconv.Itoa(dups)+" × duplicate point") {
		t.Errorf("warning %q does not count %d duplicates", lines[0], dups)
	}
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "duplicate point") || strings.Contains(text.String(), "warning") {
		t.Error("the terminal report carries warnings")
	}
	if !strings.HasPrefix(text.String(), "What to ship") {
		t.Errorf("the terminal report opens with %q", strings.SplitN(text.String(), "\n", 2)[0])
	}
}

// Runs on one device, driver and NVRTC with read bandwidths within noise
// are one environment row: the committed results hold 21 runs of ktune
// and of the PyTorch reference script.
func TestEnvironmentsGrouped(t *testing.T) {
	t.Parallel()
	recs := allH200(t)
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Envs) != 2 {
		for _, e := range rep.Envs {
			t.Log(envLine(&e))
		}
		t.Fatalf("%d environment rows, want 2 (ktune's runs and the reference script's)", len(rep.Envs))
	}
	n, runs := 0, 0
	for _, e := range rep.Envs {
		n += e.Records
		runs += e.Runs
		if e.ReadBWMin > e.ReadBWMax || e.ReadBWMax > e.ReadBWMin*(1+bwNoise) {
			t.Errorf("bandwidth range %.0f–%.0f", e.ReadBWMin, e.ReadBWMax)
		}
	}
	if n != len(recs) || runs < 3 {
		t.Errorf("%d records in %d runs, want %d records", n, runs, len(recs))
	}
}

// Every table of the terminal and Markdown reports has at most seven
// columns, whatever the input.
func TestTablesBounded(t *testing.T) {
	t.Parallel()
	rep, err := Build(allH200(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, md bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdownTable(&md); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if c := strings.Count(l, "│"); c > 8 {
			t.Errorf("%d columns: %.120s", c-1, l)
			break
		}
	}
	for _, l := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(l, "|") && strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") > 8 {
			t.Errorf("Markdown table of %d columns: %.120s", strings.Count(l, "|")-1, l)
			break
		}
	}
}
