package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// TestSanitizeUndecided: a run passes only on a clean report of a worker
// that gated its point. A worker the device's memory refused, a point
// the worker failed before its gates, and the sanitizer's own failure
// each leave a report that found nothing, and each decides nothing: the
// run goes to the back of the queue, a memory shortage takes a worker out
// of the pool, and a run undecided after its tries gets no verdict, is
// not kept, and keeps its kernel from being measured without being
// called wrong.
func TestSanitizeUndecided(t *testing.T) {
	memcheck := []sanitizer.Tool{sanitizer.Memcheck}
	run := func(t *testing.T, points []*plan.Point, jobs int, env ...string) (Verdicts, string, SanitizeOptions) {
		t.Helper()
		var log strings.Builder
		opts := SanitizeOptions{Tools: memcheck, Binary: os.Args[0], Dir: filepath.Join(t.TempDir(), "sanitize"),
			Jobs: jobs, Log: &log, Worker: fakeCommand(append(env, envFakeGates+"=10")...)}
		v, err := Sanitize(context.Background(), points, opts)
		if err != nil {
			t.Fatal(err)
		}
		return v, log.String(), opts
	}
	passes := func(v Verdicts, key string) bool {
		gs := v.Gates[key]
		return len(gs) == 1 && gs[0].Pass && len(v.Undecided[key]) == 0
	}

	t.Run("worker never started", func(t *testing.T) {
		points := cleanSanitizePlan()[:1]
		// A pool tries a start twice (slot.ensure): one try refused, then a
		// clean run; the pass is the second try's.
		v, log, _ := run(t, points, 1, envFakeSanEarly+"=1", envFakeStartFail+"="+makeTokens(t, 2))
		if !passes(v, "g-a") || !strings.Contains(log, "undecided, tried again later (try 1 of 3)") ||
			!strings.Contains(log, "CUDA_ERROR_OUT_OF_MEMORY") {
			t.Errorf("verdicts %+v; the log:\n%s", v, log)
		}
		// Every start refused: no verdict, whatever the report says.
		v, log, opts := run(t, points, 1, envFakeSanEarly+"=1", envFakeStartFail+"="+makeTokens(t, 2*maxTries))
		if len(v.Gates["g-a"]) != 0 || len(v.Undecided["g-a"]) != 1 || !strings.Contains(v.Undecided["g-a"][0], "did not gate the point") {
			t.Fatalf("every start refused: verdicts %+v; the log:\n%s", v, log)
		}
		if !strings.Contains(log, "undecided after 3 tries, no verdict") || !strings.Contains(log, "1 of 1 runs undecided") {
			t.Errorf("the log:\n%s", log)
		}
		// Not kept: a later sanitize runs it again and decides.
		opts.Worker = fakeCommand()
		opts.Log = nil
		again, err := Sanitize(context.Background(), points, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !passes(again, "g-a") {
			t.Errorf("after an undecided run, a good one: %+v", again)
		}
		// The sweep over no verdict: the point's own gates run, unmeasured;
		// when they pass, an error record, neither a gate failure nor a
		// measured point.
		inner := &countingBackend{Backend: replay.New(recordsFor(testPlan(4)))}
		rec, err := Sanitized(inner, v).Run(context.Background(), points[0])
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != results.StatusError || len(rec.Probes) != 0 || inner.runs != 1 || !SanitizeUndecided(rec) {
			t.Errorf("undecided point: %s %q, %d probes, %d runs", rec.Status, rec.Error, len(rec.Probes), inner.runs)
		}
		if len(inner.probes) != 1 || inner.probes[0] != 0 {
			t.Errorf("the undecided point ran with probes %v, want gates only", inner.probes)
		}
		// When its own gates fail, that failure is its record.
		failing := testPlan(4).Points[3] // recordsFor: gate_failed
		failing.GateKey = "g-a"
		rec, err = Sanitized(inner, v).Run(context.Background(), failing)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != results.StatusGateFailed || SanitizeUndecided(rec) {
			t.Errorf("undecided point whose gates fail: %s %q", rec.Status, rec.Error)
		}
		// A decided point's record is a result, not to run again.
		for _, r := range recordsFor(testPlan(4)) {
			if SanitizeUndecided(r) {
				t.Errorf("a %s record taken for an undecided one", r.Status)
			}
		}
	})

	t.Run("point failed before its gates", func(t *testing.T) {
		points := cleanSanitizePlan()[:1]
		points[0].Config.Variant = "oom" // the fake worker's record: oom, no gates
		v, log, _ := run(t, points, 1)
		if len(v.Gates["g-a"]) != 0 || len(v.Undecided["g-a"]) != 1 || !strings.Contains(v.Undecided["g-a"][0], "oom: allocating") {
			t.Errorf("verdicts %+v; the log:\n%s", v, log)
		}
	})

	t.Run("the kernel faulted", func(t *testing.T) {
		// The fake worker's "fault" point: a fault record, under a
		// sanitizer that did not fail, in every try. Tried twice, not
		// three times: undecided, and the point's own gates record the
		// fault.
		points := cleanSanitizePlan()[:1]
		points[0].Config.Variant = "fault"
		count := filepath.Join(t.TempDir(), "count")
		v, log, _ := run(t, points, 1, envFakeSanCount+"="+count)
		if len(v.Gates["g-a"]) != 0 || len(v.Undecided["g-a"]) != 1 ||
			!strings.Contains(log, "undecided, tried again later (try 1 of 2)") || !strings.Contains(log, "undecided after 2 tries, no verdict") {
			t.Errorf("verdicts %+v; the log:\n%s", v, log)
		}
		if n := sanitizeRuns(t, count); n != faultTries {
			t.Errorf("a faulting kernel ran %d times under the sanitizer, want %d", n, faultTries)
		}
	})

	t.Run("a kernel named as one of ktune's own", func(t *testing.T) {
		// The sanitizer skips util.cu's kernels by name (Args), so a run
		// of an engine kernel of the same name would report clean having
		// checked nothing of it: not run, undecided. By a launch's entry,
		// a name expression or a module's entry alike. A name that only
		// shares ktune's prefix is checked.
		for _, c := range []struct {
			set     func(*plan.Point)
			checked bool
		}{
			{func(p *plan.Point) { p.Source.Partial = "ktune_fill" }, false},
			{func(p *plan.Point) { p.Source.NameExprs = []string{"&ktune_digest"} }, false},
			{func(p *plan.Point) { p.Source.Modules = []plan.Module{{Entries: []string{"ktune_copies"}}} }, false},
			{func(p *plan.Point) { p.Source.Partial = "ktune_tt_partial" }, true},
			{func(p *plan.Point) { p.Source.NameExprs = []string{"decode<ktune_params>"} }, true},
			{func(p *plan.Point) { p.Source.Modules = []plan.Module{{Entries: []string{"my_ktune_combine"}}} }, true},
		} {
			points := cleanSanitizePlan()[:2]
			c.set(points[0])
			count := filepath.Join(t.TempDir(), "count")
			v, log, _ := run(t, points, 1, envFakeSanCount+"="+count)
			n := sanitizeRuns(t, count)
			switch {
			case c.checked && (!passes(v, "g-a") || n == 0):
				t.Errorf("%+v: a kernel the sanitizer checks, %d runs; verdicts %+v; the log:\n%s", points[0].Source, n, v, log)
			case !c.checked && (len(v.Gates["g-a"]) != 0 || len(v.Undecided["g-a"]) != 1 ||
				!strings.Contains(v.Undecided["g-a"][0], "the sanitizer skips ktune's own kernels by name")):
				t.Errorf("%+v: verdicts %+v; the log:\n%s", points[0].Source, v, log)
			case !c.checked && n != 0:
				t.Errorf("%+v: %d sanitizer runs of a kernel it would skip", points[0].Source, n)
			}
		}
	})

	t.Run("a worker slow to exit", func(t *testing.T) {
		// The worker gates its point and takes a while to exit, while the
		// sanitizer has still to write its summary. Killed before that, it
		// leaves the banner alone: undecided, the kill named. Given the
		// time, the same run passes.
		points := cleanSanitizePlan()[:1]
		sanitize := func(wait time.Duration) (Verdicts, string) {
			var log strings.Builder
			v, err := Sanitize(context.Background(), points, SanitizeOptions{Tools: memcheck, Binary: os.Args[0],
				Dir: filepath.Join(t.TempDir(), "sanitize"), Jobs: 1, Log: &log, StopWait: wait,
				Worker: fakeCommand(envFakeLinger + "=1s")})
			if err != nil {
				t.Fatal(err)
			}
			return v, log.String()
		}
		v, log := sanitize(100 * time.Millisecond)
		if len(v.Gates["g-a"]) != 0 || len(v.Undecided["g-a"]) != 1 ||
			!strings.Contains(v.Undecided["g-a"][0], "left no summary") ||
			!strings.Contains(v.Undecided["g-a"][0], "had not exited 100ms after it was told to stop and was killed") {
			t.Errorf("killed at 100 ms: verdicts %+v; the log:\n%s", v, log)
		}
		if v, log := sanitize(10 * time.Second); !passes(v, "g-a") {
			t.Errorf("given 10 s: verdicts %+v; the log:\n%s", v, log)
		}
	})

	t.Run("a fault that does not come back", func(t *testing.T) {
		// A good kernel's first try faults (on the H200, with the device
		// crowded); its second decides: a pass, and no worker leaves the
		// pool for it.
		count := filepath.Join(t.TempDir(), "count")
		v, log, _ := run(t, cleanSanitizePlan(), 2, envFakeSanCount+"="+count, envFakeFault+"="+makeTokens(t, 1))
		for _, key := range []string{"g-a", "g-b", "g-c"} {
			if !passes(v, key) {
				t.Errorf("%s: %+v; the log:\n%s", key, v, log)
			}
		}
		if !strings.Contains(log, "undecided, tried again later (try 1 of 2)") || strings.Contains(log, "from now on") {
			t.Errorf("the log:\n%s", log)
		}
		if n := sanitizeRuns(t, count); n != 4 {
			t.Errorf("%d sanitizer runs, want 4 (three kernels, one again)", n)
		}
	})

	t.Run("the sanitizer failed", func(t *testing.T) {
		points := cleanSanitizePlan()[:1]
		v, log, _ := run(t, points, 1, envFakeSanInternal+"="+makeTokens(t, 1))
		if !passes(v, "g-a") || !strings.Contains(log, "compute-sanitizer failed: Internal Sanitizer Error") {
			t.Errorf("verdicts %+v; the log:\n%s", v, log)
		}
		v, _, _ = run(t, points, 1, envFakeSanInternal+"="+makeTokens(t, maxTries))
		if len(v.Gates["g-a"]) != 0 || len(v.Undecided["g-a"]) != 1 {
			t.Errorf("the sanitizer failing every try: %+v", v)
		}
		// With two workers, the failure takes one out of the pool.
		v, log, _ = run(t, cleanSanitizePlan(), 2, envFakeSanInternal+"="+makeTokens(t, 1))
		if !strings.Contains(log, ": 1 sanitized workers at a time from now on") {
			t.Errorf("no shrink after the sanitizer's failure; the log:\n%s", log)
		}
		for _, key := range []string{"g-a", "g-b", "g-c"} {
			if !passes(v, key) {
				t.Errorf("%s: %+v", key, v)
			}
		}
	})

	t.Run("fewer workers after a memory shortage", func(t *testing.T) {
		// Three groups, three workers: the three first starts refused, and
		// one of their second starts.
		points := cleanSanitizePlan()
		v, log, _ := run(t, points, 3, envFakeSanEarly+"=1", envFakeStartFail+"="+makeTokens(t, 4))
		for _, key := range []string{"g-a", "g-b", "g-c"} {
			if !passes(v, key) {
				t.Errorf("%s: %+v", key, v)
			}
		}
		if !strings.Contains(log, "sanitize: the device is crowded (its memory, or the sanitizer failing): 2 sanitized workers at a time from now on") {
			t.Errorf("no shrink; the log:\n%s", log)
		}
	})
}
