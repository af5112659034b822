package sweep

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// groupedPlan builds a plan of groups gate groups of nkvs points each, in
// plan order: the points of a group are consecutive and share a GateKey.
func groupedPlan(groups, nkvs int) *plan.Plan {
	pl := testPlan(groups * nkvs)
	for i, p := range pl.Points {
		p.GateKey = "g" + string(rune('a'+i/nkvs))
	}
	return pl
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		err  string
	}{
		{"0/4", Shard{0, 4}, ""},
		{"3/4", Shard{3, 4}, ""},
		{" 1 / 2 ", Shard{1, 2}, ""},
		{"4/4", Shard{}, "0 ≤ INDEX < COUNT"},
		{"-1/4", Shard{}, "0 ≤ INDEX < COUNT"},
		{"0/0", Shard{}, "0 ≤ INDEX < COUNT"},
		{"1", Shard{}, "want INDEX/COUNT"},
		{"a/b", Shard{}, "want INDEX/COUNT"},
	} {
		got, err := ParseShard(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseShard(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestShardPartitionsByGateGroup(t *testing.T) {
	const groups, nkvs = 7, 3
	pl := groupedPlan(groups, nkvs)
	for _, n := range []int{1, 2, 3, 7, 9} {
		owner := map[string]int{} // hash → shard
		groupShard := map[string]int{}
		perShard := make([]int, n)
		for i := range n {
			sel := Shard{i, n}.Filter(pl.Points)
			again := Shard{i, n}.Filter(pl.Points)
			for _, p := range pl.Points {
				if sel(p) != again(p) {
					t.Fatalf("n=%d: shard %d is not deterministic", n, i)
				}
				if !sel(p) {
					continue
				}
				if prev, ok := owner[p.Hash]; ok {
					t.Errorf("n=%d: point %s in shards %d and %d", n, p.Hash, prev, i)
				}
				owner[p.Hash] = i
				if g, ok := groupShard[p.GateKey]; ok && g != i {
					t.Errorf("n=%d: gate group %s split over shards %d and %d", n, p.GateKey, g, i)
				}
				groupShard[p.GateKey] = i
				perShard[i]++
			}
		}
		if len(owner) != len(pl.Points) {
			t.Errorf("n=%d: shards cover %d of %d points", n, len(owner), len(pl.Points))
		}
		// Whole groups dealt in turn: shard sizes differ by at most one group.
		lo, hi := perShard[0], perShard[0]
		for _, c := range perShard {
			lo, hi = min(lo, c), max(hi, c)
		}
		if hi-lo > nkvs {
			t.Errorf("n=%d: shard sizes %v differ by more than one group", n, perShard)
		}
	}
}

// sweepShards runs every shard of pl into its own directory with a Replay
// backend and returns the directories.
func sweepShards(t *testing.T, pl *plan.Plan, n int) []string {
	t.Helper()
	base := t.TempDir()
	var dirs []string
	for i := range n {
		dir := filepath.Join(base, "shard-"+string(rune('0'+i)))
		sh := Shard{i, n}
		if _, err := Run(context.Background(), replay.New(recordsFor(pl)), pl,
			RunOptions{Dir: dir, Filter: sh.Filter(pl.Points), Clock: fakeClock()}); err != nil {
			t.Fatal(err)
		}
		m := &Manifest{Spec: "t", Plan: PlanHash(pl.Points), Points: len(pl.Points), Count: n, Shards: []int{i}}
		if err := WriteManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

func TestMergeShardsEqualsUnsharded(t *testing.T) {
	pl := groupedPlan(5, 2)
	whole := t.TempDir()
	if _, err := Run(context.Background(), replay.New(recordsFor(pl)), pl, RunOptions{Dir: whole, Clock: fakeClock()}); err != nil {
		t.Fatal(err)
	}
	want, _, err := results.ReadFile(results.FilePath(whole))
	if err != nil {
		t.Fatal(err)
	}
	dirs := sweepShards(t, pl, 3)
	m, err := Merge(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 0 || m.Identical != 0 {
		t.Errorf("warnings %q, %d identical", m.Warnings, m.Identical)
	}
	// The same points with the same results; time and wall time are the
	// run's own.
	key := func(recs []results.Record) map[string]results.Record {
		out := map[string]results.Record{}
		for _, r := range recs {
			r.Time, r.WallSec = time.Time{}, 0
			out[r.Hash] = r
		}
		return out
	}
	if g, w := key(m.Records), key(want); !reflect.DeepEqual(g, w) {
		t.Errorf("merged shards differ from the unsharded sweep:\n got %d records\nwant %d", len(g), len(w))
	}
	if m.Manifest == nil || !reflect.DeepEqual(m.Manifest.Shards, []int{0, 1, 2}) || m.Manifest.Plan != PlanHash(pl.Points) {
		t.Errorf("merged manifest %+v", m.Manifest)
	}
	// Deterministic: the inputs in order, each in file order.
	var order []string
	for _, d := range dirs {
		recs, _, _ := results.ReadFile(results.FilePath(d))
		order = append(order, recHashes(recs)...)
	}
	same(t, "merged order", recHashes(m.Records), order)
	again, err := Merge(dirs)
	if err != nil || !reflect.DeepEqual(again.Records, m.Records) {
		t.Errorf("a second merge of the same inputs differs (%v)", err)
	}
}

func TestMergeRefuses(t *testing.T) {
	pl := groupedPlan(4, 2)
	copyDir := func(t *testing.T, from string) string {
		to := t.TempDir()
		for _, name := range []string{results.FileName, ManifestName} {
			b, err := os.ReadFile(filepath.Join(from, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return to
	}
	rewrite := func(t *testing.T, dir string, change func(*results.Record)) {
		recs, _, err := results.ReadFile(results.FilePath(dir))
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(results.FilePath(dir))
		w, err := results.OpenWriter(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for i := range recs {
			change(&recs[i])
			if err := w.Append(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("identical duplicate kept once", func(t *testing.T) {
		dirs := sweepShards(t, pl, 2)
		dup := copyDir(t, dirs[0])
		os.Remove(filepath.Join(dup, ManifestName)) // a copied file, without its manifest
		m, err := Merge([]string{dirs[0], dirs[1], dup})
		if err != nil {
			t.Fatal(err)
		}
		n0, _, _ := results.ReadFile(results.FilePath(dirs[0]))
		if m.Identical != len(n0) || len(m.Records) != len(pl.Points) {
			t.Errorf("%d identical, %d records; want %d and %d", m.Identical, len(m.Records), len(n0), len(pl.Points))
		}
	})
	t.Run("same hash, other result", func(t *testing.T) {
		dirs := sweepShards(t, pl, 2)
		other := copyDir(t, dirs[0])
		os.Remove(filepath.Join(other, ManifestName))
		rewrite(t, other, func(r *results.Record) { r.WallSec += 1 })
		_, err := Merge([]string{dirs[0], dirs[1], other})
		if err == nil || !strings.Contains(err.Error(), "recorded differently") || !strings.Contains(err.Error(), "leave out the input") {
			t.Fatalf("merge of a point measured twice: %v", err)
		}
	})
	t.Run("another spec", func(t *testing.T) {
		dirs := sweepShards(t, pl, 2)
		rewrite(t, dirs[1], func(r *results.Record) { r.Config.Spec = "other" })
		_, err := Merge(dirs)
		if err == nil || !strings.Contains(err.Error(), `spec "other"`) {
			t.Fatalf("merge of two specs: %v", err)
		}
	})
	t.Run("another plan", func(t *testing.T) {
		dirs := sweepShards(t, pl, 2)
		m, _ := ReadManifest(dirs[1])
		m.Plan = "0123456789abcdef"
		WriteManifest(dirs[1], m)
		_, err := Merge(dirs)
		if err == nil || !strings.Contains(err.Error(), "different sweeps") {
			t.Fatalf("merge of two plans: %v", err)
		}
	})
	t.Run("one shard twice", func(t *testing.T) {
		dirs := sweepShards(t, pl, 2)
		_, err := Merge([]string{dirs[0], copyDir(t, dirs[0])})
		if err == nil || !strings.Contains(err.Error(), "both hold shard 0/2") {
			t.Fatalf("merge of shard 0 twice: %v", err)
		}
	})
	t.Run("missing shard warns", func(t *testing.T) {
		dirs := sweepShards(t, pl, 3)
		m, err := Merge([]string{dirs[0], dirs[2]})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "shard(s) 1 of 3 are missing") {
			t.Errorf("warnings %q", m.Warnings)
		}
	})
}

func TestCheckManifest(t *testing.T) {
	dir := t.TempDir()
	m := &Manifest{Spec: "t", Plan: "p", Points: 8, Count: 4, Shards: []int{1}}
	if err := CheckManifest(dir, m); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	edited := *m
	edited.Plan = "q" // the spec was edited: the shard resumes
	if err := CheckManifest(dir, &edited); err != nil {
		t.Errorf("resuming shard 1/4 after an edit: %v", err)
	}
	other := *m
	other.Shards = []int{2}
	if err := CheckManifest(dir, &other); err == nil || !strings.Contains(err.Error(), "directory of its own") {
		t.Errorf("shard 2/4 into shard 1/4's directory: %v", err)
	}
	got, err := ReadManifest(dir)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Errorf("ReadManifest = %+v, %v; want %+v", got, err, m)
	}
}

// A record of a newer schema is not skipped with a warning: Merge refuses
// the input, since what it returns replaces the inputs.
func TestMergeRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	line := `{"schema":99,"hash":"aaaa000000000001","config":{"spec":"slice"}}` + "\n"
	path := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Merge([]string{path})
	if err == nil || !strings.Contains(err.Error(), "newer ktune") {
		t.Fatalf("merged %+v, err %v; want a refusal naming the newer schema", m, err)
	}
}

// A shard whose task stopped early is reported by merge, not merged as if
// complete: its manifest says how many points it set out to record.
func TestMergeReportsStoppedShard(t *testing.T) {
	pl := groupedPlan(4, 2)
	dirs := sweepShards(t, pl, 2)
	for i, d := range dirs {
		m, err := ReadManifest(d)
		if err != nil || m == nil {
			t.Fatal(err)
		}
		recs, _, _ := results.ReadFile(results.FilePath(d))
		m.Selected = len(recs)
		if i == 1 {
			m.Selected++ // one point never recorded
		}
		if err := WriteManifest(d, m); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Merge(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], dirs[1]) || !strings.Contains(m.Warnings[0], "stopped early") {
		t.Errorf("warnings %q: want one naming %s as stopped early", m.Warnings, dirs[1])
	}
}

// TestMergeRefusesShardCopy: a shard directory copied under another
// shard's number (its manifest says shard 1, its records are shard 0's)
// merged as "shards 2 of 2" with shard 1's points absent.
func TestMergeRefusesShardCopy(t *testing.T) {
	pl := groupedPlan(4, 2)
	dirs := sweepShards(t, pl, 2)
	fake := t.TempDir()
	b, err := os.ReadFile(results.FilePath(dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(results.FilePath(fake), b, 0o644); err != nil {
		t.Fatal(err)
	}
	m0, _ := ReadManifest(dirs[0])
	m1, _ := ReadManifest(dirs[1])
	m0.Shards = m1.Shards
	if err := WriteManifest(fake, m0); err != nil {
		t.Fatal(err)
	}
	_, err = Merge([]string{dirs[0], fake})
	if err == nil || !strings.Contains(err.Error(), "found in two different shards") {
		t.Fatalf("a copy of shard 0 under shard 1's number: %v", err)
	}
}
