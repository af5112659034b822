package verdict

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A candidate of a graph: never variant has no replay gate: its records
// say so among their waivers (plan.NeverCapturedText), and the verdict
// text says the pass holds without that gate, where before it listed one
// gate fewer and said nothing.
func TestGateSaysReplayNotRun(t *testing.T) {
	var recs []results.Record
	for _, r := range gateInput(t) {
		if r.Config.Variant == "same" {
			r.Gates = slices.DeleteFunc(slices.Clone(r.Gates), func(g results.Gate) bool { return g.Kind == results.GateReplay })
			r.Waivers = []string{plan.NeverCapturedText}
		}
		recs = append(recs, r)
	}
	res, err := Gate(recs, GateOptions{Candidate: "same", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass: the waiver must not change the verdict", res.Verdict)
	}
	var out bytes.Buffer
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Numerics {
		if !slices.Equal(n.Waivers, []string{plan.NeverCapturedText}) || strings.Contains(n.Reason, string(results.GateReplay)+",") {
			t.Errorf("%s %s: waivers %q, reason %q", n.Shape, n.Config, n.Waivers, n.Reason)
		}
	}
	if want := "under the spec's waivers: replay gate: not run, nor the graph probe (graph: never"; !strings.Contains(out.String(), want) {
		t.Errorf("the verdict text does not say the replay gate was not run (%q):\n%s", want, out.String())
	}

	// The intact candidate carries no waiver, and its text names none.
	res, err = Gate(gateInput(t), GateOptions{Candidate: "same", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "waiver") {
		t.Errorf("a candidate without waivers is said to have some:\n%s", out.String())
	}
}

// A candidate whose spec declares its engine's cache finite past each
// length passed a stale gate that wrote no NaN or Inf there: the verdict
// text says so, with the reason, so that the pass never reads as the
// full stale gate's.
func TestGateSaysStaleRowsFinite(t *testing.T) {
	declared := plan.StaleWaiver{Rows: plan.StaleFinite, Reason: "cleared at allocation"}.String()
	var recs []results.Record
	for _, r := range gateInput(t) {
		if r.Config.Variant == "same" {
			r.Waivers = []string{declared}
		}
		recs = append(recs, r)
	}
	res, err := Gate(recs, GateOptions{Candidate: "same", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Numerics {
		if !slices.Equal(n.Waivers, []string{declared}) || !strings.Contains(n.Reason, "under the spec's waivers: "+declared) {
			t.Errorf("%s %s: waivers %q, reason %q", n.Shape, n.Config, n.Waivers, n.Reason)
		}
	}
	if want := "stale gate: finite rows only past each length, no NaN or Inf (cleared at allocation)"; !strings.Contains(out.String(), want) {
		t.Errorf("the verdict text does not name the declaration (%q):\n%s", want, out.String())
	}
}
