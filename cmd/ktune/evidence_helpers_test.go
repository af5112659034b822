package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A jrec is one results line as plain JSON, so that a test can make any
// edit a person with jq could: null a field, re-case a key, negate a
// sample.
type jrec = map[string]any

// readJRecs reads every line of a results file as a jrec, numbers kept as
// written.
func readJRecs(t testing.TB, path string) []jrec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []jrec
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		var r jrec
		if err := d.Decode(&r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, r)
	}
	return out
}

// writeJRecs writes recs as a results file in dir and returns its path.
func writeJRecs(t testing.TB, dir, name string, recs []jrec) string {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// cloneJ deep-copies a jrec through JSON.
func cloneJ(r jrec) jrec {
	b, _ := json.Marshal(r)
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out jrec
	d.Decode(&out)
	return out
}

func cfgOf(r jrec) jrec { m, _ := r["config"].(jrec); return m }

func variantOf(r jrec) string { s, _ := cfgOf(r)["variant"].(string); return s }

func nkvOf(r jrec) string { return string(cfgOf(r)["nkv"].(json.Number)) }

func splitsOf(r jrec) string { return string(cfgOf(r)["splits"].(json.Number)) }

func probesOf(r jrec) []any { p, _ := r["probes"].([]any); return p }

// gateDoc is the part of gate --json the tests read.
type gateDoc struct {
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	Points   []struct {
		NKV        int    `json:"nkv"`
		Probe      string `json:"probe"`
		Candidate  string `json:"candidate"`
		Regression bool   `json:"regression"`
	} `json:"points"`
}

// regressing returns the index of the candidate record behind the first
// regressing point of gate --json over path, and that point's probe.
func regressing(t testing.TB, path, candidate string) (int, string) {
	t.Helper()
	stdout, _, code := runCmd("gate", "--candidate", candidate, "--json", path)
	var doc gateDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("gate --json: %v (exit %d)", err, code)
	}
	recs := readJRecs(t, path)
	for _, p := range doc.Points {
		if !p.Regression {
			continue
		}
		for i, r := range recs {
			// p.Candidate reads "r4 SPLITS=64 NR=4"; the slice's r4
			// configurations differ only in SPLITS.
			f := strings.Fields(p.Candidate)
			if variantOf(r) == candidate && nkvOf(r) == strconv.Itoa(p.NKV) && "SPLITS="+splitsOf(r) == f[1] {
				return i, p.Probe
			}
		}
	}
	t.Fatalf("gate over %s found no regression of %s", path, candidate)
	return 0, ""
}
