package verdict

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/workload"
)

func loadWorkload(t *testing.T, name string) *workload.Workload {
	t.Helper()
	w, err := workload.Load(filepath.Join("..", "experiments", "workloads", name))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func sliceRecords(t *testing.T) []results.Record {
	return loadJSONL(t, filepath.Join("..", "experiments", "results", "h200", "slice.jsonl"))
}

// The weighted gate over the committed slice: long-context passes, a
// candidate made a little faster everywhere still passes (a speed-up
// never fails it), and one whose long-context samples are cut to three a
// side is undecided: a bootstrap of three samples cannot decide what the
// U test cannot.
func TestGateWorkloadDecides(t *testing.T) {
	w := loadWorkload(t, "long-context.csv")
	opts := GateOptions{Candidate: "r4", Threshold: 0.02, Workload: w, MaxRegressedWeight: DefaultMaxRegressedWeight}
	res, err := Gate(sliceRecords(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictPass || res.Workload == nil || len(res.Workload.Groups) != 2 {
		t.Fatalf("long-context: %s, groups %d, want pass over cold and hot", res.Verdict, len(res.Workload.Groups))
	}
	faster := sliceRecords(t)
	for i := range faster {
		if faster[i].Config.Variant != "r4" {
			continue
		}
		for j := range faster[i].Probes {
			for k := range faster[i].Probes[j].SamplesNS {
				faster[i].Probes[j].SamplesNS[k] *= 0.9
			}
		}
	}
	if res, err := Gate(faster, opts); err != nil || res.Verdict != VerdictPass {
		t.Errorf("r4 10%% faster everywhere: %v %v, want pass", res.Verdict, err)
	}
	few := sliceRecords(t)
	for i := range few {
		if few[i].Config.NKV != 32768 {
			continue
		}
		for j := range few[i].Probes {
			few[i].Probes[j].SamplesNS = few[i].Probes[j].SamplesNS[:3]
		}
	}
	res, err = Gate(few, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictUndecided || !strings.Contains(res.Workload.Groups[0].Reason, "cannot decide (nkv 32768)") {
		t.Errorf("three samples a side at nkv 32768: %s, %q; want undecided naming the point", res.Verdict, res.Workload.Groups[0].Reason)
	}
}

// A workload at a batch no compared point has is undecided, never a pass.
func TestGateWorkloadElsewhereUndecided(t *testing.T) {
	w := &workload.Workload{Name: "b16", Buckets: []workload.Bucket{{Batch: 16, NKV: 2048, Weight: 1}}}
	res, err := Gate(sliceRecords(t), GateOptions{Candidate: "r4", Threshold: 0.02, Workload: w, MaxRegressedWeight: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictUndecided {
		t.Errorf("a batch-16 workload over batch-1 points: %s, want undecided", res.Verdict)
	}
}
