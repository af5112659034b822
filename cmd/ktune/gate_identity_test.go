package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Two shapes that differ in one attention option only are two problems:
// a kernel may be fast at one and slow at the other. The gate judges each
// as a point of its own, so that r4, 1.5× slower than d2 at the second
// shape only, is a regression there, with both shapes as rows of their
// own, whatever the first shape's comparison says; the report, too,
// keeps both shapes' rows, under labels of their own.
func TestGateTellsAttentionOptionsApart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slow, fast jrec // the attention options of the two shapes
	}{
		{"window", jrec{"window": 4096}, jrec{"window": 1024}},
		{"softcap", jrec{"softcap": 50}, jrec{"softcap": 30}},
		{"alibi", jrec{"alibi": "buffer"}, jrec{"alibi": "standard"}},
		{"mla", jrec{"mla": jrec{"dv": 64, "layout": "split"}}, jrec{"mla": jrec{"dv": 64, "layout": "latent"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := twoShapeFile(t, tc.fast, tc.slow)
			stdout, _, code := runCmd("gate", "--candidate", "r4", "--against", "d2", "--json", path)
			var doc struct {
				Verdict string `json:"verdict"`
				Points  []struct {
					Shape      string `json:"shape"`
					Probe      string `json:"probe"`
					Regression bool   `json:"regression"`
				} `json:"points"`
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("gate --json: %v (exit %d)\n%s", err, code, stdout)
			}
			if code != exitRegression || doc.Verdict != "regression" {
				t.Errorf("exit %d, verdict %q, want %d, regression", code, doc.Verdict, exitRegression)
			}
			shapes := map[string]bool{}
			regressed := map[string]bool{}
			for _, p := range doc.Points {
				shapes[p.Shape] = true
				if p.Regression {
					regressed[p.Shape] = true
				}
			}
			if len(shapes) != 2 || len(regressed) != 1 {
				t.Errorf("rows of %d shapes (%v), regressions at %d (%v); want 2 shapes, 1 regressing", len(shapes), shapes, len(regressed), regressed)
			}
			for s := range regressed {
				if !strings.Contains(s, tc.name) {
					t.Errorf("the regressing row %q does not name the option that tells it apart", s)
				}
			}
			// The report keeps both shapes' records, under two labels.
			stdout, _, code = runCmd("report", "--json", path)
			var rep struct {
				Rows []struct {
					Shape string `json:"shape"`
				} `json:"rows"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("report --json: %v (exit %d)", err, code)
			}
			labels := map[string]int{}
			for _, r := range rep.Rows {
				labels[r.Shape]++
			}
			if len(rep.Rows) != 4 || len(labels) != 2 {
				t.Errorf("report: %d rows under labels %v, want 4 rows under 2 labels", len(rep.Rows), labels)
			}
		})
	}
}

// twoShapeFile writes a results file with d2 and r4 (SPLITS=32, nkv 8192,
// as the committed slice measured them) at two shapes: the slice's 7b with
// the attention options fast, where both keep their samples, and with
// slow, where every sample of r4 takes 1.5× as long.
func twoShapeFile(t *testing.T, fast, slow jrec) string {
	t.Helper()
	var out []jrec
	for _, opts := range []jrec{fast, slow} {
		for _, r := range readJRecs(t, h200Slice) {
			if (variantOf(r) != "d2" && variantOf(r) != "r4") || splitsOf(r) != "32" || nkvOf(r) != "8192" {
				continue
			}
			r = cloneJ(r)
			cfgOf(r)["shape"].(jrec)["attention"] = opts
			r["hash"] = fmt.Sprintf("%s%02d", r["hash"].(string)[:14], len(out))
			if variantOf(r) == "r4" && sameJ(opts, slow) {
				for _, p := range probesOf(r) {
					m := p.(jrec)
					for i, s := range m["samples_ns"].([]any) {
						x, _ := s.(json.Number).Float64()
						m["samples_ns"].([]any)[i] = x * 1.5
					}
				}
			}
			out = append(out, r)
		}
	}
	if len(out) != 4 {
		t.Fatalf("slice.jsonl gave %d records of d2 and r4 at SPLITS=32, nkv=8192; want 2 per shape", len(out))
	}
	return writeJRecs(t, t.TempDir(), "two-shapes.jsonl", out)
}

func sameJ(a, b jrec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
