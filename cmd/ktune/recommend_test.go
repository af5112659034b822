package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/report"
)

// The recommendation report.md opens with is what its command emits:
// for every shape with a landed kernel of the committed results, `ktune
// tune` run as the report says writes the same arms, at most 3; and
// every arm not measured at a measured nkv is named with a sweep.
func TestRecommendationIsTuneOutput(t *testing.T) {
	t.Parallel()
	recs, sources, err := loadSourced(io.Discard, h200All(t))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build(recs, report.Options{Sources: sources, MaxArms: report.DefaultMaxArms})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Recommend) < 3 {
		t.Fatalf("%d recommendations, want one per shape with a landed kernel (3 or more)", len(rep.Recommend))
	}
	for _, rc := range rep.Recommend {
		if rc.Error != "" {
			t.Errorf("%s: %s", rc.Shape, rc.Error)
			continue
		}
		if len(rc.Arms) == 0 || len(rc.Arms) > report.DefaultMaxArms {
			t.Errorf("%s: %d arms", rc.Shape, len(rc.Arms))
		}
		named := map[int]bool{}
		for _, m := range rc.Missing {
			named[m.NKV] = true
		}
		for _, c := range rc.Cells {
			if c.Unmeasured && !named[c.NKV] {
				t.Errorf("%s nkv %d: the arm was not measured and no missing point says so", rc.Shape, c.NKV)
			}
			noLanded := slices.Contains(rc.NoLanded, c.NKV)
			hasLanded := len(c.Versus) > 0 && c.Versus[0].Against == "landed"
			if !c.Unmeasured && (c.Median.Center <= 0 || hasLanded == noLanded) {
				t.Errorf("%s nkv %d: a measured cell without its time or its speedup over landed: %+v", rc.Shape, c.NKV, c)
			}
		}
		if len(rc.Missing) > 0 && len(rc.Sweeps) == 0 {
			t.Errorf("%s: missing points without a sweep command", rc.Shape)
		}
		// Run the command as printed, into a temporary directory.
		args := strings.Fields(rc.Command)
		if args[0] != "ktune" || args[len(args)-2] != "-o" {
			t.Fatalf("%s: command %q", rc.Shape, rc.Command)
		}
		out := filepath.Join(t.TempDir(), "d")
		args[len(args)-1] = out
		for i, a := range args {
			if strings.HasPrefix(a, "experiments/") {
				args[i] = filepath.Join("..", "..", a)
			}
		}
		if _, stderr, code := runCmd(args[1:]...); code != 0 {
			t.Fatalf("%s: %q: exit %d: %s", rc.Shape, rc.Command, code, stderr)
		}
		data, err := os.ReadFile(filepath.Join(out, "dispatch.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			MaxArms int `yaml:"max_arms"`
			Shapes  []struct {
				Heads    int    `yaml:"heads"`
				KVHeads  int    `yaml:"kv_heads"`
				HeadDim  int    `yaml:"head_dim"`
				Batch    int    `yaml:"batch"`
				PageSize int    `yaml:"page_size"`
				KVDtype  string `yaml:"kv_dtype"`
				Ranges   []struct {
					MinNKV  int    `yaml:"min_nkv"`
					MaxNKV  int    `yaml:"max_nkv"`
					Variant string `yaml:"variant"`
				} `yaml:"ranges"`
			} `yaml:"shapes"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var got []string
		d := rcDims(rep, rc)
		for _, s := range doc.Shapes {
			if s.Batch == d.Batch && s.Heads == d.Heads && s.KVHeads == d.KVHeads && s.HeadDim == d.HeadDim &&
				s.KVDtype == string(d.KVDtype) && s.PageSize == 0 && len(got) == 0 {
				for _, r := range s.Ranges {
					got = append(got, r.Variant+" "+strconv.Itoa(r.MinNKV)+" "+strconv.Itoa(r.MaxNKV))
				}
			}
		}
		var want []string
		for _, a := range rc.Arms {
			want = append(want, strings.Fields(a.Config)[0]+" "+strconv.Itoa(a.MinNKV)+" "+strconv.Itoa(a.MaxNKV))
		}
		if strings.Join(got, "; ") != strings.Join(want, "; ") || doc.MaxArms != report.DefaultMaxArms {
			t.Errorf("%s: tune emits %q (max_arms %d), report recommends %q", rc.Shape, got, doc.MaxArms, want)
		}
	}
}

func rcDims(rep *report.Report, rc report.Recommendation) results.Shape {
	for _, s := range rep.Ship {
		if s.Shape == rc.Shape && s.Device == rc.Device {
			return s.Dims
		}
	}
	return results.Shape{}
}

// report --workload adds the section and its bar chart; a workload file
// that does not parse is a usage error naming its line.
func TestReportWorkload(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r")
	wl := filepath.Join("..", "..", "experiments", "workloads", "short-turns.csv")
	if _, stderr, code := runCmd("report", h200Slice, "-o", out, "--workload", wl); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Under workload short-turns") {
		t.Error("report.md has no workload section")
	}
	if _, err := os.Stat(filepath.Join(out, "workload_7b.png")); err != nil {
		t.Errorf("no bar chart: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("batch,nkv,weight\n1,x,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var e bytes.Buffer
	err = run(io.Discard, &e, []string{"report", h200Slice, "-o", out, "--workload", bad})
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "bad.csv:2: nkv \"x\"") {
		t.Errorf("bad workload: %v (exit %d)", err, exitCode(err))
	}
}
