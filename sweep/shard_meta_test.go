package sweep

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// The metamorphic property of merge: whatever is done to the shard
// directories of a sweep (a shard copied under another number, into
// another's directory or beside it, dropped, given twice, renumbered),
// merge refuses, warns, or its records cover every point of the plan. It
// never reports a complete merge with points absent.
func TestMergeNeverMorePermissive(t *testing.T) {
	pl := groupedPlan(6, 2)
	const n = 3
	copyFile := func(t *testing.T, from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edits := []struct {
		name  string
		apply func(t *testing.T, dirs []string, i, j int) []string
	}{
		{"records of one shard copied over another's", func(t *testing.T, dirs []string, i, j int) []string {
			copyFile(t, results.FilePath(dirs[i]), results.FilePath(dirs[j]))
			return dirs
		}},
		{"a shard copied under another's number in its place", func(t *testing.T, dirs []string, i, j int) []string {
			d := t.TempDir()
			copyFile(t, results.FilePath(dirs[i]), results.FilePath(d))
			copyFile(t, filepath.Join(dirs[j], ManifestName), filepath.Join(d, ManifestName))
			dirs[j] = d
			return dirs
		}},
		{"a shard's records appended to another's", func(t *testing.T, dirs []string, i, j int) []string {
			a, _ := os.ReadFile(results.FilePath(dirs[i]))
			f, err := os.OpenFile(results.FilePath(dirs[j]), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(a)
			f.Close()
			return dirs
		}},
		{"a shard dropped", func(t *testing.T, dirs []string, i, j int) []string {
			return append(dirs[:j:j], dirs[j+1:]...)
		}},
		{"a shard given twice", func(t *testing.T, dirs []string, i, j int) []string { return append(dirs, dirs[i]) }},
		{"a shard renumbered", func(t *testing.T, dirs []string, i, j int) []string {
			m, err := ReadManifest(dirs[j])
			if err != nil {
				t.Fatal(err)
			}
			m.Shards = []int{i}
			WriteManifest(dirs[j], m)
			return dirs
		}},
		{"a shard's manifest lost", func(t *testing.T, dirs []string, i, j int) []string {
			os.Remove(filepath.Join(dirs[j], ManifestName))
			return dirs
		}},
	}
	for _, e := range edits {
		for i := range n {
			for j := range n {
				if i == j {
					continue
				}
				dirs := e.apply(t, sweepShards(t, pl, n), i, j)
				m, err := Merge(dirs)
				if err != nil || len(m.Warnings) > 0 {
					continue
				}
				if len(m.Records) != len(pl.Points) {
					t.Errorf("%s (shards %d, %d): merged with no warning, %d of the plan's %d points",
						e.name, i, j, len(m.Records), len(pl.Points))
				}
			}
		}
	}
}
