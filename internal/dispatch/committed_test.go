package dispatch

import (
	"bytes"
	"os"
	"testing"

	"github.com/ktune/ktune/internal/golden"
)

// TestCommittedDispatchRegenerates rebuilds the committed H200 dispatch
// tables from the committed results files, as `make dispatch` does, and
// requires the same bytes: the table must be reproducible from the results
// alone.
func TestCommittedDispatchRegenerates(t *testing.T) {
	t.Chdir("../..") // paths are recorded as given, relative to the repository root
	for _, d := range []struct{ src, dir string }{
		{"experiments/results/h200/h200-frontier2.jsonl", "experiments/results/h200/dispatch"},
		// The third frontier's forms: tables by page size and q_len.
		{"experiments/results/h200/frontier3/paged/h200-frontier3-paged.jsonl", "experiments/results/h200/frontier3/paged/dispatch"},
	} {
		in, err := Load(d.src)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := Build(in.Records, in.Sources, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			file  string
			write func(*bytes.Buffer) error
		}{
			{d.dir + "/dispatch.yaml", func(b *bytes.Buffer) error { return tab.WriteYAML(b) }},
			{d.dir + "/dispatch.h", func(b *bytes.Buffer) error { return tab.WriteHeader(b) }},
		} {
			var got bytes.Buffer
			if err := c.write(&got); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s does not regenerate byte for byte from %s (run make dispatch; -committed +regenerated):\n%s", c.file, d.src, golden.Diff(string(want), got.String()))
			}
		}
	}
}
