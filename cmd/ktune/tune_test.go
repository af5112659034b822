package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/search"
)

const tuneSpec = "../../experiments/slice.yaml"

var tuneEnv = results.Env{Device: "NVIDIA H200", Arch: "sm_90", SMs: 132, ReadBWGBps: 4560}

// modelled is a fake device whose cold times follow a model of the slice:
// linear in nkv, cheapest at SPLITS=32, r4 and d2 alike; each point takes
// its Measure.MinSamples samples with ±1% noise.
type modelled struct{ runs int }

func (m *modelled) Env(context.Context) (results.Env, error) { return tuneEnv, nil }
func (m *modelled) Close() error                             { return nil }
func (m *modelled) Run(_ context.Context, p *plan.Point) (results.Record, error) {
	m.runs++
	splits := p.Config.Splits
	penalty := map[int]float64{8: 1.6, 16: 1.2, 32: 1, 64: 1.01}[splits]
	med := (5e3 + 2*float64(p.Config.NKV)) * penalty
	h, _ := strconv.ParseUint(p.Hash, 16, 64)
	r := rand.New(rand.NewPCG(h, 1))
	s := make([]float64, p.Measure.MinSamples)
	for i := range s {
		s[i] = med * (1 + 0.01*(2*r.Float64()-1))
	}
	return results.Record{Config: p.Config, Env: tuneEnv, Status: results.StatusOK,
		Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), WallSec: 1,
		Gates:  []results.Gate{{Kind: results.GateTolerance, NKV: 29, Pass: true}},
		Probes: []results.Measurement{{Probe: results.ProbeCold, SamplesNS: s, Converged: true, Bytes: p.Config.KVBytes()}}}, nil
}

func tuneDeps(b plan.Backend) sweepDeps {
	return sweepDeps{
		open:  func(backendSpec) (plan.Backend, error) { return b, nil },
		isTTY: func(io.Writer) bool { return false },
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTuneSearchExportsAsFrom: after each search, DIR holds the table that
// 'tune --from DIR' builds from DIR's results.
func TestTuneSearchExportsAsFrom(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"grid", nil},
		{"random", []string{"--search", "random", "--samples", "3", "--seed", "9"}},
		{"halving", []string{"--search", "halving", "--rounds", "3"}},
		{"model", []string{"--search", "model", "--batch", "3", "--seed", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, again := t.TempDir(), t.TempDir()
			var stdout, stderr bytes.Buffer
			args := append([]string{tuneSpec, "-o", dir}, tc.args...)
			if err := runTune(context.Background(), &stdout, &stderr, args, tuneDeps(&modelled{})); err != nil {
				t.Fatalf("tune %q: %v\n%s", args, err, stderr.String())
			}
			if !strings.Contains(stdout.String(), "SPLITS=32") {
				t.Errorf("the printed table does not name the fastest SPLITS:\n%s", stdout.String())
			}
			var from bytes.Buffer
			if err := run(&from, &stderr, []string{"tune", "--from", dir, "-o", again}); err != nil {
				t.Fatalf("tune --from: %v\n%s", err, stderr.String())
			}
			for _, f := range []string{"dispatch.yaml", "dispatch.h"} {
				if a, b := readFile(t, filepath.Join(dir, f)), readFile(t, filepath.Join(again, f)); !bytes.Equal(a, b) {
					t.Errorf("%s after the search differs from tune --from:\n%s\n----\n%s", f, a, b)
				}
			}
			var log search.SearchResult
			if err := json.Unmarshal(readFile(t, filepath.Join(dir, "search.json")), &log); err != nil {
				t.Fatal(err)
			}
			if string(log.Strategy) != tc.name || log.Configurations != 8 {
				t.Errorf("search.json: %+v", log)
			}
			switch tc.name {
			case "random":
				if log.Settings["seed"] != "9" || log.Settings["samples"] != "3" {
					t.Errorf("search.json does not record the draw: %+v", log.Settings)
				}
			case "halving":
				// r4 and d2 at SPLITS 8 and 16 are far slower everywhere.
				if len(log.Rounds) < 2 || len(log.Rounds[0].Dropped) != 4 {
					t.Errorf("halving rounds: %+v", log.Rounds)
				}
				if _, err := os.Stat(results.FilePath(search.ScreenDir(dir))); err != nil {
					t.Errorf("no screening records: %v", err)
				}
			}
		})
	}
}

// TestTuneGridEqualsSweep: the default search records what sweep does.
func TestTuneGridEqualsSweep(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := runTune(context.Background(), &stdout, &stderr, []string{tuneSpec, "-o", a}, tuneDeps(&modelled{})); err != nil {
		t.Fatalf("tune: %v\n%s", err, stderr.String())
	}
	if err := runSweep(context.Background(), &stdout, &stderr, []string{tuneSpec, "-o", b}, tuneDeps(&modelled{})); err != nil {
		t.Fatalf("sweep: %v\n%s", err, stderr.String())
	}
	ra, _, err := results.ReadFile(results.FilePath(a))
	if err != nil {
		t.Fatal(err)
	}
	rb, _, err := results.ReadFile(results.FilePath(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(ra) != 64 || !reflect.DeepEqual(ra, rb) {
		t.Errorf("tune recorded %d records, sweep %d, or they differ", len(ra), len(rb))
	}
	// A search run again resumes: nothing is measured twice.
	m := &modelled{}
	if err := runTune(context.Background(), &stdout, &stderr, []string{tuneSpec, "-o", b, "--search", "halving"}, tuneDeps(m)); err != nil {
		t.Fatalf("tune: %v\n%s", err, stderr.String())
	}
	// Screening: 8 configurations × 8 nkv at 5 samples, then the 4 at
	// SPLITS 32 and 64 (within 1%: kept) at 10; the final round finds every
	// survivor's full points recorded by the sweep.
	if m.runs != 64+32 {
		t.Errorf("halving after a sweep ran %d points; want only the 96 screening points", m.runs)
	}
	if !strings.Contains(stdout.String(), "round 3 of 3 (the spec's stopping rule): 4 configurations, 32 points (32 already recorded, 0 run)") {
		t.Errorf("the final round measured again what the sweep recorded:\n%s", stdout.String())
	}
}

func TestTuneUsageErrors(t *testing.T) {
	deps := sweepDeps{
		open:  func(backendSpec) (plan.Backend, error) { t.Fatal("opened a backend"); return nil, nil },
		isTTY: func(io.Writer) bool { return false },
	}
	for _, args := range [][]string{
		{tuneSpec},
		{tuneSpec, "-o", "d", "--search", "anneal"},
		{tuneSpec, "-o", "d", "--search", "random"},
		{tuneSpec, "-o", "d", "--samples", "3"},
		{tuneSpec, "-o", "d", "--search", "random", "--samples", "3", "--rounds", "2"},
		{tuneSpec, "-o", "d", "--search", "halving", "--rounds", "0"},
		{tuneSpec, "-o", "d", "--search", "halving", "--keep", "-1"},
		{"--from", "x", "-o", "d", "--search", "halving"},
		{"--from", "x", "-o", "d", "--devices", "all"},
		{"a.yaml", "b.yaml", "-o", "d"},
		{tuneSpec, "-o", "d", "--probe", "hot"},
		{tuneSpec, "-o", "d", "--search", "model", "--samples", "3"},
		{tuneSpec, "-o", "d", "--search", "model", "--batch", "0"},
		{tuneSpec, "-o", "d", "--search", "halving", "--seed", "3"},
		{tuneSpec, "-o", "d", "--seeds", "3"},
		{"--simulate"},
		{"--simulate", simFixture, "-o", "d"},
		{"--simulate", simFixture, "--search", "random,anneal"},
		{"--simulate", simFixture, "--search", "model", "--rounds", "2"},
		{"--simulate", simFixture, "--seed", "2"},
		{"--simulate", simFixture, "--seeds", "0"},
		{"--simulate", simFixture, "--search", "random", "--samples", "3"},
	} {
		var stdout, stderr bytes.Buffer
		if err := runTune(context.Background(), &stdout, &stderr, args, deps); exitCode(err) != exitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, exitCode(err), err, exitUsage)
		}
	}
}

const simFixture = "../../search/testdata/window.jsonl"

// TestTuneSimulate: --simulate runs every strategy over recorded results
// and prints, per strategy and threshold, the points it needed.
func TestTuneSimulate(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--simulate", simFixture, "--search", "all", "--seeds", "3"}
	if err := runTune(context.Background(), &stdout, &stderr, args, tuneDeps(nil)); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, simFixture+": 32 points, 8 configurations, 4 cells; 3 seeds") {
		t.Errorf("no space header:\n%s", out)
	}
	for _, name := range search.Names() {
		for _, within := range []string{"1%", "2%"} {
			if !strings.Contains(out, "\n"+string(name)+strings.Repeat(" ", 10-len(name))+within) {
				t.Errorf("no row for %s within %s:\n%s", name, within, out)
			}
		}
	}
	// A strategy's own flags reach the simulation: model at batch 1
	// proposes otherwise than at 4.
	var b1 bytes.Buffer
	args = []string{"--simulate", simFixture, "--search", "model", "--seeds", "1", "--batch", "1"}
	if err := runTune(context.Background(), &b1, &stderr, args, tuneDeps(nil)); err != nil {
		t.Fatal(err)
	}
	var b4 bytes.Buffer
	args = []string{"--simulate", simFixture, "--search", "model", "--seeds", "1"}
	if err := runTune(context.Background(), &b4, &stderr, args, tuneDeps(nil)); err != nil {
		t.Fatal(err)
	}
	if b1.String() == b4.String() {
		t.Errorf("--batch 1 simulated as the default:\n%s", b1.String())
	}
}

// TestTunePrunesByCompileFacts: with --max-registers, tune compiles the
// points first and never times one whose kernel breaks it; search.json
// says which and why. Without a way to compile first, the budget is an
// error, not a silent no-op.
func TestTunePrunesByCompileFacts(t *testing.T) {
	m := &modelled{}
	deps := tuneDeps(m)
	var compiled int
	deps.facts = func(arch string, points []*plan.Point, _ io.Writer) (map[string]search.Facts, error) {
		out := map[string]search.Facts{}
		for _, p := range points {
			compiled++
			regs := 40
			if p.Config.Splits == 64 {
				regs = 96
			}
			out[p.Hash] = search.Facts{Builds: true, Resources: []results.Resource{{Kernel: "attn_partial", Registers: regs}}}
		}
		return out, nil
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{tuneSpec, "-o", dir, "--max-registers", "64"}
	if err := runTune(context.Background(), &stdout, &stderr, args, deps); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var log search.SearchResult
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "search.json")), &log); err != nil {
		t.Fatal(err)
	}
	if compiled != 64 || m.runs != 48 || len(log.Pruned) != 16 || !strings.Contains(log.Pruned[0], "96 registers, over max_registers 64") {
		t.Errorf("compiled %d, timed %d, pruned %d: %v", compiled, m.runs, len(log.Pruned), log.Pruned)
	}
	if strings.Contains(stdout.String(), "SPLITS=64") {
		t.Errorf("the table names a pruned configuration:\n%s", stdout.String())
	}
	err := runTune(context.Background(), &stdout, &stderr, args, tuneDeps(&modelled{}))
	if err == nil || !strings.Contains(err.Error(), "need every point compiled first") {
		t.Errorf("a budget without compile facts: %v", err)
	}
}
