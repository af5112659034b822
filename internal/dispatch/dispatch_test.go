package dispatch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

var fixSources = []Source{{Name: "experiments/results/h200/fixture.jsonl", SHA256: strings.Repeat("ab", 32)}}

func buildFixture(t *testing.T, opt Options) *Table {
	t.Helper()
	tab, err := Build(fixture(), fixSources, opt)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return tab
}

func render(t *testing.T, tab *Table) (yml, hdr, txt []byte) {
	t.Helper()
	var y, h, x bytes.Buffer
	if err := tab.WriteYAML(&y); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteHeader(&h); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteText(&x); err != nil {
		t.Fatal(err)
	}
	return y.Bytes(), h.Bytes(), x.Bytes()
}

func TestGolden(t *testing.T) {
	yml, hdr, txt := render(t, buildFixture(t, Options{}))
	golden.Check(t, filepath.Join("testdata", "dispatch.yaml.golden"), yml)
	golden.Check(t, filepath.Join("testdata", "dispatch.h.golden"), hdr)
	golden.Check(t, filepath.Join("testdata", "dispatch.txt.golden"), txt)
}

// TestExpectedRanges checks the fixture's table against the ranges worked
// out by hand from fixturePlan (see its comment).
func TestExpectedRanges(t *testing.T) {
	tab := buildFixture(t, Options{})
	type want struct {
		lo, hi int
		label  string
	}
	cases := map[int][]want{
		1: {
			{1, 1024, "r4 SPLITS=32"},         // √(512·2048) = 1024
			{1024, 4096, "d2 NR=4 SPLITS=32"}, // √(2048·8192) = 4096
			{4096, 0, "d2 NR=4 SPLITS=64"},    // 8192 … 131072
		},
		16: {{1, 0, "d2 NR=4 SPLITS=32"}},
	}
	if len(tab.Shapes) != 2 {
		t.Fatalf("got %d shapes, want 2", len(tab.Shapes))
	}
	for _, st := range tab.Shapes {
		w := cases[st.Shape.Batch]
		if len(st.Ranges) != len(w) {
			t.Errorf("batch %d: got %d ranges %v, want %d", st.Shape.Batch, len(st.Ranges), st.Ranges, len(w))
			continue
		}
		for i, r := range st.Ranges {
			if r.MinNKV != w[i].lo || r.MaxNKV != w[i].hi || configLabel(r) != w[i].label {
				t.Errorf("batch %d range %d: got [%d, %d) %s, want [%d, %d) %s",
					st.Shape.Batch, i, r.MinNKV, r.MaxNKV, configLabel(r), w[i].lo, w[i].hi, w[i].label)
			}
		}
	}
}

func TestRules(t *testing.T) {
	tab := buildFixture(t, Options{})
	cases := []struct {
		batch, nkv int
		label      string
		rule       decision.Rule
	}{
		{1, 512, "r4 SPLITS=32", decision.RuleLanded},            // tie, d2/32's median lower
		{1, 2048, "d2 NR=4 SPLITS=32", decision.RuleSignificant}, // 15 vs 18 µs
		{1, 16384, "d2 NR=4 SPLITS=64", decision.RuleNeighbours}, // tie; 8192 and 32768 are d2/64's
		{16, 1024, "d2 NR=4 SPLITS=32", decision.RuleSplits},     // tie, no decided neighbour
		{16, 8192, "d2 NR=4 SPLITS=32", decision.RuleSplits},
	}
	for _, c := range cases {
		r, p := findPick(t, tab, c.batch, c.nkv)
		if configLabel(r) != c.label || p.Rule != c.rule {
			t.Errorf("batch %d nkv %d: got %s by %s (%s), want %s by %s",
				c.batch, c.nkv, configLabel(r), p.Rule, p.Margin, c.label, c.rule)
		}
	}
}

// TestTieKeepsLanded: at nkv 512 d2 NR=4 SPLITS=32 has the lower median,
// but not significantly: the landed r4 stays.
func TestTieKeepsLanded(t *testing.T) {
	recs := fixture()
	var landed, faster *results.Record
	for i := range recs {
		r := &recs[i]
		if r.Config.Shape.Batch != 1 || r.Config.NKV != 512 {
			continue
		}
		switch {
		case r.Landed:
			landed = r
		case r.Config.Variant == "d2" && r.Config.Splits == 32:
			faster = r
		}
	}
	lm, fm := landed.Probe(results.ProbeCold), faster.Probe(results.ProbeCold)
	if !(fm.Summary.Median < lm.Summary.Median) {
		t.Fatalf("fixture: the challenger's median %v is not below the landed %v", fm.Summary.Median, lm.Summary.Median)
	}
	c := stats.Compare(fm.SamplesNS, lm.SamplesNS, decision.Alpha)
	if c.Significant {
		t.Fatalf("fixture: the difference at nkv 512 is significant (%v); it should be a tie", c)
	}

	r, p := findPick(t, buildFixture(t, Options{}), 1, 512)
	if !(r.Variant == "r4") || p.Rule != decision.RuleLanded {
		t.Errorf("nkv 512: got %s by %s, want the landed r4", configLabel(r), p.Rule)
	}
	if !strings.HasPrefix(p.Margin, "~ d2 NR=4 SPLITS=32 (") {
		t.Errorf("nkv 512 margin %q does not name the tie", p.Margin)
	}
}

func TestGateFailedNeverChosen(t *testing.T) {
	for _, probe := range []results.Probe{results.ProbeCold, results.ProbeGraph} {
		// The fixture is only a test of the filter if the failed
		// configuration would otherwise win everywhere.
		fastest := map[[2]int]string{}
		best := map[[2]int]float64{}
		for _, r := range fixture() {
			m := r.Probe(probe)
			if m == nil {
				continue
			}
			k := [2]int{r.Config.Shape.Batch, r.Config.NKV}
			if _, ok := best[k]; !ok || m.Summary.Median < best[k] {
				best[k], fastest[k] = m.Summary.Median, r.Config.Variant
			}
		}
		for k, v := range fastest {
			if v != cfgF.variant {
				t.Fatalf("fixture: at batch %d nkv %d the fastest is %s, not the gate-failed configuration", k[0], k[1], v)
			}
		}
		tab := buildFixture(t, Options{Probe: probe})
		for _, st := range tab.Shapes {
			for _, r := range st.Ranges {
				if r.Variant == cfgF.variant {
					t.Errorf("%s: the gate-failed %s was chosen for [%d, %d)", probe, r.Variant, r.MinNKV, r.MaxNKV)
				}
			}
		}
	}
}

func TestWarnsUncoveredNKV(t *testing.T) {
	tab := buildFixture(t, Options{})
	if len(tab.Warnings) != 1 || !strings.Contains(tab.Warnings[0], "nkv 65536") {
		t.Errorf("warnings = %q, want one about nkv 65536", tab.Warnings)
	}
}

func TestReproducible(t *testing.T) {
	y1, h1, x1 := render(t, buildFixture(t, Options{}))
	// The same records in another order (a different file order or map
	// iteration) must give the same bytes.
	recs := fixture()
	rng := rand.New(rand.NewPCG(7, 7))
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	tab, err := Build(recs, fixSources, Options{})
	if err != nil {
		t.Fatal(err)
	}
	y2, h2, x2 := render(t, tab)
	for _, c := range []struct {
		name string
		a, b []byte
	}{{"yaml", y1, y2}, {"header", h1, h2}, {"text", x1, x2}} {
		if !bytes.Equal(c.a, c.b) {
			t.Errorf("%s differs between two builds:\n%s", c.name, golden.Diff(string(c.a), string(c.b)))
		}
	}
}

// runHeaderProbe compiles a C program that includes hdr as dispatch.h,
// with -std=c99 -pedantic -Wall -Werror, runs it and returns its output;
// it skips the test without a C compiler.
func runHeaderProbe(t *testing.T, hdr []byte, probe string) []byte {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) on PATH")
	}
	dir := t.TempDir()
	for name, data := range map[string]string{"dispatch.h": string(hdr), "probe.c": probe} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "probe")
	if out, err := exec.Command(cc, "-std=c99", "-pedantic", "-Wall", "-Werror", "-o", bin, filepath.Join(dir, "probe.c")).CombinedOutput(); err != nil {
		t.Fatalf("the header does not compile: %v\n%s", err, out)
	}
	got, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLoad writes the fixture to results files and reads them back: names
// stay relative, hashes are of the bytes, a bad line is a warning, and two
// loads give byte-identical outputs.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	sweep := filepath.Join(dir, "h200")
	if err := os.MkdirAll(sweep, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, r := range fixture() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	buf.WriteString("{not json\n")
	file := filepath.Join(sweep, results.FileName)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())

	var outs [2][]byte
	for i := range outs {
		in, err := Load(sweep) // a directory: its results.jsonl
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Warnings) != 1 {
			t.Errorf("warnings = %v, want the one malformed line", in.Warnings)
		}
		want := Source{Name: "h200/results.jsonl", SHA256: hex.EncodeToString(sum[:])}
		if len(in.Sources) != 1 || in.Sources[0] != want {
			t.Errorf("sources = %+v, want %+v", in.Sources, want)
		}
		if len(in.Records) != len(fixture()) {
			t.Errorf("read %d records, want %d", len(in.Records), len(fixture()))
		}
		tab, err := Build(in.Records, in.Sources, Options{})
		if err != nil {
			t.Fatal(err)
		}
		y, h, _ := render(t, tab)
		outs[i] = append(y, h...)
		if bytes.Contains(outs[i], []byte(dir)) {
			t.Errorf("output contains the absolute path %s", dir)
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Errorf("two loads differ:\n%s", golden.Diff(string(outs[0]), string(outs[1])))
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(fixture(), nil, Options{Probe: results.ProbeHot}); err == nil || !strings.Contains(err.Error(), "hot") {
		t.Errorf("no hot samples: err = %v, want one naming the probe", err)
	}
	recs := fixture()
	recs[0].Env.Device = "NVIDIA H100"
	if _, err := Build(recs, nil, Options{}); err == nil || !strings.Contains(err.Error(), "several devices") {
		t.Errorf("two devices: err = %v", err)
	}
}

func TestBoundary(t *testing.T) {
	cases := []struct{ lo, hi, want int }{
		{512, 2048, 1024},  // exact geometric mean
		{100, 10000, 1000}, // a log-spaced axis
		{1000, 3000, 1732}, // √3e6 = 1732.05
		{1, 2, 2},          // √2 rounds to 1, kept above lo
		{2, 3, 3},          // √6 = 2.449 rounds to 2, kept above lo
		{7, 8, 7 + 1},
	}
	for _, c := range cases {
		if got := boundary(c.lo, c.hi); got != c.want {
			t.Errorf("boundary(%d, %d) = %d, want %d", c.lo, c.hi, got, c.want)
		}
	}
}

func TestCString(t *testing.T) {
	cases := map[string]string{
		`d2`:           `"d2"`,
		`a"b\c`:        `"a\"b\\c"`,
		"kernels/é.cu": `"kernels/\303\251.cu"`,
		"??=":          `"\?\?="`,
	}
	for in, want := range cases {
		if got := cString(in); got != want {
			t.Errorf("cString(%q) = %s, want %s", in, got, want)
		}
	}
}

func findPick(t *testing.T, tab *Table, batch, nkv int) (Range, Pick) {
	t.Helper()
	for _, st := range tab.Shapes {
		if st.Shape.Batch != batch {
			continue
		}
		for _, r := range st.Ranges {
			for _, p := range r.Picks {
				if p.NKV == nkv {
					return r, p
				}
			}
		}
	}
	t.Fatalf("no pick for batch %d nkv %d", batch, nkv)
	return Range{}, Pick{}
}
