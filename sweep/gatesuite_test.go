package sweep

import (
	"context"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// testSuite stands for the gates' suite (gate.Suite, which the sweep is
// given): one name, and the invariance gate's contexts where a point asks
// for them.
func testSuite(p *plan.Point) string {
	if p.Invariance != nil {
		return "s1; invariance " + p.Invariance.String()
	}
	return "s1"
}

// recordSuites writes pl's records into dir, the i-th naming suite(i).
func recordSuites(t *testing.T, dir string, pl *plan.Plan, suite func(i int) string) {
	t.Helper()
	w, err := results.OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, r := range recordsFor(pl) {
		r.GateSuite = suite(i)
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
}

// A record gated by another gate suite (an older build's, or one written
// before records named their suite) is not skipped on resume: the gates
// added since never saw it.
func TestRunResumeRegatesOlderSuite(t *testing.T) {
	pl := testPlan(4)
	e := newRunEnv(t)
	recordSuites(t, e.dir, pl, func(i int) string {
		return []string{"s1", "s1", "r0: tolerance; inputs uniform", ""}[i]
	})
	rp := replay.New(recordsFor(pl))
	opts := e.opts()
	opts.GateSuite = testSuite
	sum, err := Run(context.Background(), rp, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 2 || sum.Ran != 2 || len(rp.Calls()) != 2 {
		t.Errorf("resume: skipped %d, ran %d (calls %v); want the two of this suite skipped, the other two run", sum.Skipped, sum.Ran, rp.Calls())
	}
	if !strings.Contains(e.log.String(), "2 recorded point(s) were gated by another gate suite") {
		t.Errorf("the log does not say why: %q", e.log.String())
	}
	for _, r := range sum.Records {
		if r.GateSuite != "s1" {
			t.Errorf("record %s names suite %q, want this build's", r.Hash, r.GateSuite)
		}
	}
}

// A point whose variant asks for the invariance gate is gated under a
// suite that names it: its record of the plain suite (written before the
// variant asked) runs again, and the new record names the point's suite;
// the other points keep theirs.
func TestRunResumeRegatesInvariance(t *testing.T) {
	pl := testPlan(2)
	pl.Points[1].Invariance = &plan.Invariance{Kinds: []spec.Invariance{spec.InvariantBatch}}
	e := newRunEnv(t)
	recordSuites(t, e.dir, pl, func(int) string { return "s1" })
	rp := replay.New(recordsFor(pl))
	opts := e.opts()
	opts.GateSuite = testSuite
	sum, err := Run(context.Background(), rp, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 1 || sum.Ran != 1 || len(rp.Calls()) != 1 {
		t.Fatalf("resume: skipped %d, ran %d; want the invariance point run again", sum.Skipped, sum.Ran)
	}
	for _, r := range sum.Records {
		want := "s1"
		if r.Hash == pl.Points[1].Hash {
			want = testSuite(pl.Points[1])
		}
		if r.GateSuite != want || (r.Hash == pl.Points[1].Hash && !strings.Contains(r.GateSuite, "invariance batch")) {
			t.Errorf("record %s names suite %q, want %q", r.Hash, r.GateSuite, want)
		}
	}
}

// A record whose suite names the same checks in another order is of this
// suite (results.GateSuiteKey): the sweep resumes past it; one that lacks
// a check runs again.
func TestRunResumeSuiteOrder(t *testing.T) {
	pl := testPlan(2)
	e := newRunEnv(t)
	recordSuites(t, e.dir, pl, func(i int) string {
		return []string{"r1: stale written; inputs uniform", "r1: written; inputs uniform"}[i]
	})
	rp := replay.New(recordsFor(pl))
	opts := e.opts()
	opts.GateSuite = func(*plan.Point) string { return "r1: written stale; inputs uniform" }
	sum, err := Run(context.Background(), rp, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 1 || sum.Ran != 1 || len(rp.Calls()) != 1 || rp.Calls()[0] != pl.Points[1].Hash {
		t.Errorf("resume: skipped %d, ran %d (calls %v); want the reordered suite skipped and the one lacking stale run", sum.Skipped, sum.Ran, rp.Calls())
	}
}
