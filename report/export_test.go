package report

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"

	"github.com/ktune/ktune/internal/results"
)

// exportTo writes recs in the Go benchmark format into dir/name.
func exportTo(t *testing.T, dir, name string, recs []results.Record) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteGoBench(&b, recs); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// benchstatDeltas groups the results of old and new as benchstat does by
// default (-table .config -row .fullname -col .file, with benchproc, the
// package benchstat is built on) and returns, per row that both files
// hold in one table, the sign of the change benchmath finds: -1, +1, or
// 0 for "~". Rows whose two files fall in different tables — benchstat
// then prints two tables and no delta — are counted in split.
func benchstatDeltas(t *testing.T, old, new string) (deltas map[string]int, split int) {
	t.Helper()
	var parser benchproc.ProjectionParser
	tableBy, err := parser.Parse(".config", nil)
	if err != nil {
		t.Fatal(err)
	}
	rowBy, err := parser.Parse(".fullname", nil)
	if err != nil {
		t.Fatal(err)
	}
	colBy, err := parser.Parse(".file", nil)
	if err != nil {
		t.Fatal(err)
	}
	type cell struct{ table, row, col benchproc.Key }
	samples := map[cell][]float64{}
	tables := map[string]map[benchproc.Key]bool{} // row → tables it appears in
	files := benchfmt.Files{Paths: []string{old, new}}
	for files.Scan() {
		res, ok := files.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		v, ok := res.Value("sec/op")
		if !ok {
			t.Fatalf("%s: no sec/op", res.Name.Full())
		}
		c := cell{tableBy.Project(res), rowBy.Project(res), colBy.Project(res)}
		samples[c] = append(samples[c], v)
		r := c.row.String()
		if tables[r] == nil {
			tables[r] = map[benchproc.Key]bool{}
		}
		tables[r][c.table] = true
	}
	if err := files.Err(); err != nil {
		t.Fatal(err)
	}
	deltas = map[string]int{}
	th := benchmath.DefaultThresholds
	for c, so := range samples {
		if c.col.StringValues() != old {
			continue
		}
		var sn []float64
		for c2, s := range samples {
			if c2.table == c.table && c2.row == c.row && c2.col != c.col {
				sn = s
			}
		}
		if sn == nil {
			if len(tables[c.row.String()]) > 1 {
				split++
			}
			continue
		}
		a, b := benchmath.NewSample(so, &th), benchmath.NewSample(sn, &th)
		cmp := benchmath.AssumeNothing.Compare(a, b)
		sign := 0
		if cmp.P < cmp.Alpha {
			sign = 1
			if benchmath.AssumeNothing.Summary(b, 0.95).Center < benchmath.AssumeNothing.Summary(a, 0.95).Center {
				sign = -1
			}
		}
		deltas[c.row.StringValues()] = sign
	}
	return deltas, split
}

// ktuneDeltas is the same question answered by Compare, keyed by the
// exported benchmark name without its "Benchmark" prefix.
func ktuneDeltas(t *testing.T, old, new []results.Record) map[string]int {
	t.Helper()
	c, err := Compare(old, new)
	if err != nil {
		t.Fatal(err)
	}
	labels := shapeLabels(append(slices.Clone(old), new...))
	label := func(r *results.Record) string { return labels[shapeKey(r.Config.Shape)] }
	byName := map[string]*results.Record{}
	for i := range new {
		byName[pointName(&new[i], label)] = &new[i]
	}
	out := map[string]int{}
	for _, r := range c.Rows {
		rec := byName[fmt.Sprintf("%s %s nkv=%d", r.Shape, r.Config, r.NKV)]
		if rec == nil {
			t.Fatalf("no record for row %s %s nkv=%d", r.Shape, r.Config, r.NKV)
		}
		sign := 0
		if r.Significant {
			sign = 1
			if r.DeltaPct < 0 {
				sign = -1
			}
		}
		out[strings.TrimPrefix(benchName(rec), "Benchmark")+"/probe="+string(r.Probe)] = sign
	}
	return out
}

// Two runs on the same GPU, exported, compare under plain `benchstat
// old.txt new.txt`: every row both hold lands in one table with a delta,
// and the delta agrees in direction with ktune compare — on the committed
// rerun (the same kernel again: "~") and on slice.jsonl against itself
// with d2 made 10% faster.
func TestExportComparesUnderBenchstat(t *testing.T) {
	dir := t.TempDir()
	slice := loadH200(t, "slice.jsonl")
	for _, tc := range []struct {
		name     string
		old, new []results.Record
	}{
		{"rerun", slice, loadH200(t, "rerun.jsonl")},
		{"d2 10% faster", slice, scaledVariant(slice, "d2", 0.9)},
	} {
		oldPath := exportTo(t, dir, "old.txt", tc.old)
		newPath := exportTo(t, dir, "new.txt", tc.new)
		got, split := benchstatDeltas(t, oldPath, newPath)
		if split > 0 {
			t.Errorf("%s: %d rows split across benchstat tables (no delta)", tc.name, split)
		}
		want := ktuneDeltas(t, tc.old, tc.new)
		if len(got) != len(want) || len(want) == 0 {
			t.Errorf("%s: benchstat compares %d rows, ktune compare %d", tc.name, len(got), len(want))
		}
		moved := 0
		for name, w := range want {
			if g, ok := got[name]; !ok || g != w {
				t.Errorf("%s: %s: benchstat %d (present %v), ktune compare %d", tc.name, name, g, ok, w)
			}
			if w != 0 {
				moved++
			}
		}
		if tc.name != "rerun" && moved == 0 {
			t.Errorf("%s: no row moved", tc.name)
		}
	}
}

// The benchstat command itself, when the go command can build it from
// the module cache: its output has a delta column ("vs base").
func TestExportBenchstatCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds golang.org/x/perf/cmd/benchstat")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build benchstat with")
	}
	dir := t.TempDir()
	oldPath := exportTo(t, dir, "old.txt", loadH200(t, "slice.jsonl"))
	newPath := exportTo(t, dir, "new.txt", loadH200(t, "rerun.jsonl"))
	out, err := exec.Command(goCmd, "run", "golang.org/x/perf/cmd/benchstat", oldPath, newPath).CombinedOutput()
	if err != nil {
		t.Skipf("cannot run benchstat here: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "vs base") || strings.Count(text, "sec/op") != 2 {
		t.Errorf("benchstat printed no comparison of old and new:\n%s", text)
	}
	if strings.Contains(text, "read-bw") {
		t.Errorf("per-run bandwidth is a benchstat configuration key:\n%s", text)
	}
}

// TestExportCleanDecimals: ns/op and the bandwidth note carry no float
// noise below a tenth (7712.000049650669 is exported as 7712), and a real
// tenth survives.
func TestExportCleanDecimals(t *testing.T) {
	recs := loadH200(t, "rerun.jsonl")[:1]
	recs[0].Probes = []results.Measurement{{Probe: results.ProbeCold, SamplesNS: []float64{7712.000049650669, 19400.04999, 8123.45}}}
	recs[0].Env.ReadBWGBps = 4312.0000001
	var b strings.Builder
	if err := WriteGoBench(&b, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{" 1 7712 ns/op\n", " 1 19400 ns/op\n", " 1 8123.5 ns/op\n", "read bandwidth 4312 GB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %q:\n%s", want, out)
		}
	}
}
