package results

import (
	"slices"
	"testing"
)

func TestMeasuredSplitsReplays(t *testing.T) {
	recs := []Record{
		{Hash: "a"},
		{Hash: "b", Replayed: &Replay{Match: ReplayHash, Hash: "b"}},
		{Hash: "c"},
		{Hash: "d", Status: StatusError, Replayed: &Replay{Match: ReplayNone}},
	}
	measured, replayed := Measured(recs)
	hashes := func(rs []Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Hash)
		}
		return out
	}
	if got := hashes(measured); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("measured = %v, want [a c]", got)
	}
	if got := hashes(replayed); !slices.Equal(got, []string{"b", "d"}) {
		t.Errorf("replayed = %v, want [b d]", got)
	}
}
