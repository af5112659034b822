package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// TestTuneSimulateCost: --cost reaches the model in a simulation. The
// fixture's records predate gate_sec, so that there the model has no
// cost to weigh by and ranks as without --cost; once the records say
// that the first nkv of each configuration paid its compile and gates,
// the weighted model proposes otherwise.
func TestTuneSimulateCost(t *testing.T) {
	simulate := func(path string, extra ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := append([]string{"--simulate", path, "--search", "model", "--seeds", "2"}, extra...)
		if err := runTune(context.Background(), &stdout, &stderr, args, tuneDeps(nil)); err != nil {
			t.Fatalf("%q: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	if plain, weighed := simulate(simFixture), simulate(simFixture, "--cost"); plain != weighed {
		t.Errorf("--cost changed a simulation over records without gate_sec:\n%s\nagainst\n%s", weighed, plain)
	}
	set, err := results.Load(simFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := results.OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range set.Records {
		r := &set.Records[i]
		r.GateSec = 1e-6
		if r.Config.NKV == 512 { // the first of each configuration in the file
			r.GateSec = r.WallSec - 0.01
		}
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if plain, weighed := simulate(dir), simulate(dir, "--cost"); plain == weighed {
		t.Errorf("--cost simulated as without it:\n%s", plain)
	}
}
