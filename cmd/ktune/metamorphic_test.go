package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/dispatch"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/report"
)

// The metamorphic property: on committed results, every mutation of the
// catalogue (mutations_test.go), applied to any record, leaves each
// decision at most as permissive as on the intact input.
//
//   - gate: an intact verdict other than pass stays other than pass;
//   - tune --from and report's "what to ship": every configuration chosen
//     at a measured nkv is one that could be chosen there on the intact
//     input (measured, every gate passed in every record of it, not a
//     fixture or a reference), or the command refuses.
//
// A pass that appears, or a choice that was not eligible, is a decision
// resting on the edit rather than on evidence.

const h200Dir = "../../experiments/results/h200/"

// gateCase is one gate command line over an input; intact, it is no pass.
type gateCase struct {
	args []string // the flags; the files follow (or --results FILE)
	spec string   // the SPEC form's spec, "" for the files form
}

type metaInput struct {
	name  string
	files []string
	gates []gateCase
}

var metaInputs = []metaInput{
	{"slice", []string{h200Dir + "slice.jsonl"}, []gateCase{
		{args: []string{"--candidate", "r4"}},
		{args: []string{"--candidate", "r4"}, spec: "../../experiments/slice.yaml"},
	}},
	{"faults", []string{h200Dir + "faults.jsonl"}, []gateCase{
		{args: []string{"--candidate", "oob"}},
		{args: []string{"--candidate", "wronglayout"}},
	}},
}

// writeInput writes in into dir and returns the paths.
func writeInput(t testing.TB, dir string, in input) []string {
	var paths []string
	for i, f := range in {
		paths = append(paths, writeJRecs(t, dir, fmt.Sprintf("in%d.jsonl", i), f))
	}
	return paths
}

// gateExit runs the gate case over paths and returns its exit status.
func gateExit(g gateCase, paths []string) int {
	args := append([]string{"gate"}, g.args...)
	if g.spec != "" {
		if len(paths) != 1 {
			return -1 // the SPEC form takes one results file
		}
		args = append(args, g.spec, "--results", paths[0])
	} else {
		args = append(args, paths...)
	}
	var o strings.Builder
	err := run(&o, io.Discard, args)
	if err == nil {
		return exitOK
	}
	return exitCode(err)
}

// choiceKey names a configuration chosen at one shape and nkv.
func choiceKey(s results.Shape, nkv int, label string) string {
	return fmt.Sprintf("h%d-kv%d-d%d-%s-b%d nkv=%d %s", s.Heads, s.KVHeads, s.HeadDim, s.KV(), s.Batch, nkv, label)
}

// eligible returns every choice the intact records allow, independently
// of the code under test: the rule written out once more, by hand.
func eligible(t testing.TB, in input) map[string]bool {
	var recs []results.Record
	for _, f := range in {
		for _, r := range f {
			b, _ := json.Marshal(r)
			var rec results.Record
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	fixtures := results.FixtureSpecs(recs)
	cfg := func(r *results.Record) string {
		return fmt.Sprint(r.Env.Device, r.Config.Shape, report.ConfigLabel(&r.Config))
	}
	failed := map[string]bool{}
	for i := range recs {
		if r := &recs[i]; r.Status != results.StatusOK || !r.GatesPass() {
			failed[cfg(r)] = true
		}
	}
	ok := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		m := r.Probe(results.ProbeCold)
		if failed[cfg(r)] || results.IsFixture(r, fixtures) || results.IsReference(r) || m == nil || len(m.SamplesNS) == 0 {
			continue
		}
		ok[choiceKey(r.Config.Shape, r.Config.NKV, report.ConfigLabel(&r.Config))] = true
	}
	return ok
}

// measuredNKV returns, per shape, the nkv the intact input measured.
func measuredNKV(in input) map[string][]int {
	out := map[string][]int{}
	seen := map[string]bool{}
	for _, f := range in {
		for _, r := range f {
			b, _ := json.Marshal(r)
			var rec results.Record
			json.Unmarshal(b, &rec)
			k := choiceKey(rec.Config.Shape, 0, "")
			if !seen[k+strconv.Itoa(rec.Config.NKV)] {
				seen[k+strconv.Itoa(rec.Config.NKV)] = true
				out[k] = append(out[k], rec.Config.NKV)
			}
		}
	}
	return out
}

// tuneChoices returns the choices of tune --from over paths at the nkv of
// nkvs, or nil when tune refuses.
func tuneChoices(paths []string, nkvs map[string][]int) []string {
	tab, err := tuneTable(io.Discard, paths, dispatch.Options{})
	if err != nil {
		return nil
	}
	var out []string
	for _, st := range tab.Shapes {
		for _, n := range nkvs[choiceKey(st.Shape, 0, "")] {
			for _, rg := range st.Ranges {
				if n >= rg.MinNKV && (rg.MaxNKV == 0 || n < rg.MaxNKV) {
					c := results.Config{Variant: rg.Variant, Defines: rg.Defines}
					if v, ok := c.Define(abi.DefineSplits); ok {
						c.Splits, _ = strconv.Atoi(v)
					}
					out = append(out, choiceKey(st.Shape, n, report.ConfigLabel(&c)))
				}
			}
		}
	}
	return out
}

// shipChoices returns the choices of report's "what to ship" over paths,
// or nil when report refuses.
func shipChoices(paths []string) []string {
	var o strings.Builder
	if err := run(&o, io.Discard, append([]string{"report", "--json", "--max-arms", "0"}, paths...)); err != nil {
		return nil
	}
	var doc struct {
		Ship []report.ShipShape `json:"ship"`
	}
	if json.Unmarshal([]byte(o.String()), &doc) != nil {
		return []string{"unparsable report"}
	}
	var out []string
	for _, s := range doc.Ship {
		d := s.Dims
		d.Capacity = 0
		for _, rg := range s.Ranges {
			for _, p := range rg.Points {
				out = append(out, choiceKey(d, p.NKV, rg.Config))
			}
		}
	}
	return out
}

// renamedOK returns the choices the mutant may make beyond ok because a
// record there differs from its intact self in config.variant alone: a
// results file cannot show that a variant's name was edited (the point
// hash covers sources the reader does not have), and the renamed record is
// the same kernel configuration measured the same way, so its new label
// is eligible where its intact label was. Every other edit is held to ok.
func renamedOK(orig, mutant input, ok map[string]bool) map[string]bool {
	out := map[string]bool{}
	strip := func(r jrec) string {
		c, _ := r["config"].(map[string]any)
		cp := map[string]any{}
		for k, v := range c {
			if k != "variant" {
				cp[k] = v
			}
		}
		rest := jrec{}
		for k, v := range r {
			rest[k] = v
		}
		rest["config"] = cp
		b, _ := json.Marshal(rest)
		return string(b)
	}
	label := func(r jrec) string {
		b, _ := json.Marshal(r)
		var rec results.Record
		if json.Unmarshal(b, &rec) != nil {
			return ""
		}
		return choiceKey(rec.Config.Shape, rec.Config.NKV, report.ConfigLabel(&rec.Config))
	}
	for f := range mutant {
		if f >= len(orig) || len(orig[f]) != len(mutant[f]) {
			continue
		}
		for i, m := range mutant[f] {
			o := orig[f][i]
			if o["hash"] != m["hash"] || strip(o) != strip(m) {
				continue
			}
			if ml, ol := label(m), label(o); ml != "" && ml != ol && ok[ol] {
				out[ml] = true
			}
		}
	}
	return out
}

// checkMutant asserts the property for one mutated input of orig.
func checkMutant(t testing.TB, mi metaInput, intact []int, ok map[string]bool, nkvs map[string][]int, orig, mutant input, what string) {
	renamed := renamedOK(orig, mutant, ok)
	dir := t.(interface{ TempDir() string }).TempDir()
	paths := writeInput(t, dir, mutant)
	for gi, g := range mi.gates {
		if intact[gi] == exitOK {
			continue
		}
		if code := gateExit(g, paths); code == exitOK {
			t.Errorf("%s: gate %v %s: exit 0, intact %d", what, g.args, g.spec, intact[gi])
		}
	}
	for _, c := range tuneChoices(paths, nkvs) {
		if !ok[c] && !renamed[c] {
			t.Errorf("%s: tune chose %s, not eligible on the intact input", what, c)
		}
	}
	for _, c := range shipChoices(paths) {
		if !ok[c] && !renamed[c] {
			t.Errorf("%s: what to ship names %s, not eligible on the intact input", what, c)
		}
	}
}

// capacity-free eligibility: tune zeroes the capacity, so the intact
// choices are keyed without it too.
func eligibleNoCap(t testing.TB, in input) map[string]bool {
	c := in.clone()
	for _, f := range c {
		for _, r := range f {
			if sh, ok := cfgOf(r)["shape"].(jrec); ok {
				sh["capacity"] = 0
			}
		}
	}
	return eligible(t, c)
}

func loadInput(t testing.TB, mi metaInput) input {
	var in input
	for _, f := range mi.files {
		in = append(in, readJRecs(t, f))
	}
	return in
}

// inputKey is in as its files would hold it: equal keys, equal inputs.
func inputKey(t testing.TB, in input) string {
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// intactExits gates the intact input and requires no case to pass there,
// or the property could not fail.
func intactExits(t testing.TB, mi metaInput, in input) []int {
	paths := writeInput(t, t.(interface{ TempDir() string }).TempDir(), in)
	var out []int
	for _, g := range mi.gates {
		code := gateExit(g, paths)
		if code == exitOK {
			t.Fatalf("%s: gate %v passes on the intact input; the case tests nothing", mi.name, g.args)
		}
		out = append(out, code)
	}
	return out
}

// Each input, and each mutation of it, is a parallel subtest: the
// commands share nothing but the read-only intact input.
func TestMetamorphicNeverMorePermissive(t *testing.T) {
	t.Parallel()
	for _, mi := range metaInputs {
		t.Run(mi.name, func(t *testing.T) {
			t.Parallel()
			metamorphicInput(t, mi)
		})
	}
}

func metamorphicInput(t *testing.T, mi metaInput) {
	{
		in := loadInput(t, mi)
		intact := intactExits(t, mi, in)
		ok, nkvs := eligibleNoCap(t, in), measuredNKV(in)
		if len(tuneChoices(writeInput(t, t.TempDir(), in), nkvs)) == 0 && mi.name == "slice" {
			t.Fatalf("tune chooses nothing on the intact slice")
		}
		// The records the decisions turn on: the gate's regressing
		// candidate record and its baseline, a fixture's good kernel, the
		// failing candidates; the fuzz target reaches the others.
		targets := map[int]bool{}
		for i, r := range in[0] {
			v, nkv := variantOf(r), nkvOf(r)
			switch {
			case mi.name == "faults" && (v == "oob" || v == "wronglayout" || v == "d2-after-oob" || v == "d2"):
				targets[i] = true
			case mi.name == "slice" && r["landed"] == true && nkv == "512":
				targets[i] = true
			}
		}
		if mi.name == "slice" {
			i, _ := regressing(t, mi.files[0], "r4")
			targets[i] = true
		}
		// The commands are deterministic: an input decides as any equal
		// input did. A third of the mutations leave the input as it was
		// (no fixture mark to remove, no samples on a faulted record) or
		// as another target's did; each distinct input is checked once,
		// the intact one here.
		intactKey := inputKey(t, in)
		checkMutant(t, mi, intact, ok, nkvs, in, in, mi.name+": intact")
		for _, m := range catalogue {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				seen := map[string]bool{intactKey: true}
				for i := range targets {
					for _, arg := range []int{0, 1}[:1+i%2] {
						mutant := m.apply(in.clone(), 0, i, arg)
						k := inputKey(t, mutant)
						if seen[k] {
							continue
						}
						seen[k] = true
						checkMutant(t, mi, intact, ok, nkvs, in, mutant, fmt.Sprintf("%s: %s of record %d (%d)", mi.name, m.name, i, arg))
					}
				}
			})
		}
	}
}
