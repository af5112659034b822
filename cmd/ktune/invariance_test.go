package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/variants"
	"gopkg.in/yaml.v3"
)

// TestTuneInvariantCommitted: on committed H200 results, tune --invariant
// writes a table whose arms share one class per shape (here mma's split
// counts: one SPLITS and MINROWS per shape), prints the price of
// invariance per shape and nkv, and costs no less than the unconstrained
// table; a file of no invariant configuration writes no table.
func TestTuneInvariantCommitted(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	from := "../../experiments/results/h200/frontier3/h200-frontier3.jsonl"
	if err := runTune(context.Background(), &stdout, &stderr, []string{"--invariant", "--from", from, "-o", out}, tuneDeps(&modelled{})); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	text := stdout.String()
	for _, want := range []string{"The price of invariance", "fastest invariant", "invariant table against the unconstrained one: +", "8b-f16-b16 (h32/kv8/d128 f16, batch 16): mma "} {
		if !strings.Contains(text, want) {
			t.Errorf("output does not say %q", want)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "dispatch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tab struct {
		Shapes []struct {
			Name   string
			Ranges []struct {
				Kernel  string
				Defines map[string]string
			}
		}
	}
	if !strings.Contains(string(b), "# Invariant: each shape's ranges are configurations of one class") {
		t.Error("dispatch.yaml does not say its arms are invariant")
	}
	if err := yaml.Unmarshal(b, &tab); err != nil {
		t.Fatal(err)
	}
	if len(tab.Shapes) != 8 {
		t.Errorf("%d shapes, want the 8 of the file", len(tab.Shapes))
	}
	for _, st := range tab.Shapes {
		var first string
		for i, r := range st.Ranges {
			class, ok := variants.InvarianceClass(r.Kernel, r.Defines)
			if !ok {
				t.Errorf("%s: arm %s %v: not a classed form", st.Name, r.Kernel, r.Defines)
			}
			if i == 0 {
				first = class
			} else if class != first {
				t.Errorf("%s: arms of classes %q and %q", st.Name, first, class)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(out, "dispatch.h")); err != nil {
		t.Error(err)
	}

	// The engine records claim nothing: no table.
	stdout.Reset()
	none := t.TempDir()
	err = runTune(context.Background(), &stdout, &stderr, []string{"--invariant", "--from", "../../experiments/results/h200/make-sweep.jsonl", "-o", none}, tuneDeps(&modelled{}))
	if err == nil || !strings.Contains(err.Error(), "no configuration among the records is invariant") {
		t.Errorf("no invariant records: %v", err)
	}
	if _, err := os.Stat(filepath.Join(none, "dispatch.yaml")); err == nil {
		t.Error("a table was written")
	}
}

// TestReportInvariance: a report over mma (classed) and mmaf (not)
// records writes the price of invariance; one over d2 and r4 alone, none
// of them classed, writes nothing.
func TestReportInvariance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		want bool
	}{
		{"../../experiments/results/h200/frontier3/h200-frontier3.jsonl", true},
		{"../../experiments/results/h200/make-sweep.jsonl", false},
	} {
		recs, _, err := results.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		var stderr bytes.Buffer
		wrote, err := reportInvariance(&stderr, recs, dir)
		if err != nil || wrote != c.want {
			t.Fatalf("%s: wrote %v, %v (%s)", c.file, wrote, err, stderr.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, "invariance.md"))
		if c.want && (err != nil || !strings.Contains(string(b), "| fastest invariant") || !strings.Contains(string(b), "b16-f1-pf")) {
			t.Errorf("%s: invariance.md %v:\n%s", c.file, err, b)
		}
		if !c.want && err == nil {
			t.Errorf("%s: invariance.md written", c.file)
		}
	}
}
