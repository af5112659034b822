package workload

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLoadForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file  string
		want  []Bucket // weights normalised
		notes []string // substrings, in order
	}{
		{"hist.csv", []Bucket{{1, 512, 0.1, ""}, {1, 8192, 0.3, ""}, {1, 32768, 0.6, ""}}, nil},
		{"trace.jsonl", []Bucket{{1, 1641, 1.0 / 3, ""}, {2, 72, 2.0 / 3, ""}},
			[]string{"3 decode call(s)", "1 line(s) of other definitions"}},
		{"steps.batchspec", []Bucket{{1, 32768, 0.2, ""}, {16, 4096, 0.2, ""}, {32, 1024, 0.6, ""}},
			[]string{"3 prefill/extend row(s)", "1 spec(s) without decode rows"}},
		{"mixed.yaml", []Bucket{{1, 512, 0.5, "twice"}, {16, 2048, 0.5, ""}}, nil},
	}
	for _, c := range cases {
		w, err := Load(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(w.Buckets) != len(c.want) {
			t.Fatalf("%s: buckets %+v, want %+v", c.file, w.Buckets, c.want)
		}
		for i, b := range w.Buckets {
			g := c.want[i]
			if b.Batch != g.Batch || b.NKV != g.NKV || !near(b.Weight, g.Weight) || b.Label != g.Label {
				t.Errorf("%s: bucket %d = %+v, want %+v", c.file, i, b, g)
			}
		}
		if len(w.Notes) != len(c.notes) {
			t.Fatalf("%s: notes %q, want %d", c.file, w.Notes, len(c.notes))
		}
		for i, n := range c.notes {
			if !strings.Contains(w.Notes[i], n) {
				t.Errorf("%s: note %q lacks %q", c.file, w.Notes[i], n)
			}
		}
	}
}

func TestParseBatchSpec(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string][3]int{ // batch, nkv, prefill rows
		"2q2k_32q1s1k":  {32, 1024, 2},
		"q1s1k":         {1, 1024, 0},
		"8q1s1k_8q1s4k": {16, 4096, 0},
		"16q4s1k":       {0, 0, 16}, // speculative rows are not decode rows
		"q2k":           {0, 0, 1},
		"3q1s100":       {3, 100, 0},
	} {
		b, p, err := ParseBatchSpec(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if got := [3]int{b.Batch, b.NKV, p}; got != want {
			t.Errorf("%s: batch, nkv, prefill = %v, want %v", spec, got, want)
		}
	}
	for _, bad := range []string{"", "32q1s", "q0", "x1", "2q4s2", "q1s1kk"} {
		if _, _, err := ParseBatchSpec(bad); err == nil {
			t.Errorf("%q: parsed, want an error", bad)
		}
	}
}

func TestLoadErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]string{
		filepath.Join("testdata", "badweight.yaml"):                                      "badweight.yaml:4: bucket batch 1, nkv 8192: weight -3",
		write("v.yaml", "workload: 2\nbuckets: []\n"):                                    "want \"workload: 1\"",
		write("k.yaml", "workload: 1\nbucket: []\n"):                                     "field bucket not found",
		write("zero.yaml", "workload: 1\nbuckets:\n  - {batch: 1, nkv: 2, weight: 0}\n"): "no bucket with a positive weight",
		write("h.csv", "batch,nkv\n1,2\n"):                                               "h.csv:1: no weight column",
		write("n.csv", "batch,nkv,weight\n1,2,3\n1,x,3\n"):                               "n.csv:3: nkv \"x\": not an integer",
		write("s.txt", "q1s1k\n\n32q1s 2\n"):                                             "s.txt:3: batch spec \"32q1s\"",
		write("t.jsonl", "{\"definition\": \"gqa_paged_decode_h32\", \"workload\": {\"axes\": {\"batch_size\": 1, \"num_kv_indices\": 2}}}\n"): "t.jsonl:1: definition \"gqa_paged_decode_h32\": no _ps",
		write("w.json", "{}"): "unknown form \".json\"",
	}
	for path, want := range cases {
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", path, err, want)
		}
	}
	var se *SyntaxError
	if _, err := Load(filepath.Join("testdata", "badweight.yaml")); !errors.As(err, &se) || se.Line != 4 {
		t.Errorf("badweight.yaml: %v, want a SyntaxError at line 4", err)
	}
}
