package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Point counts in the documentation are the plan's: a count that names
// the command giving it ("1056 points (`ktune plan --count SPEC`)") and
// every spec's own "= N points" comment must equal what `ktune plan
// --count` says now, and a count written beside a spec without the
// command ("SPEC, 384 points") is refused: it cannot be checked, and one
// such went stale.
func TestDocPointCounts(t *testing.T) {
	root := filepath.Join("..", "..")
	count := func(spec string) string {
		out, stderr, code := runCmd("plan", "--count", filepath.Join(root, spec))
		if code != exitOK {
			t.Fatalf("plan --count %s: exit %d: %s", spec, code, stderr)
		}
		first, _, _ := strings.Cut(out, "\n")
		n, _, _ := strings.Cut(strings.TrimPrefix(first, "points: "), " ")
		return n
	}
	marked := regexp.MustCompile("(\\d+) points\\s+\\(`ktune plan --count ([^`]+)`\\)")
	unmarked := regexp.MustCompile(`(experiments/[\w./-]+\.yaml), (\d+) points`)
	checked := 0
	for _, doc := range []string{"README.md", "experiments/README.md", "experiments/results/h200/FRONTIER.md", "experiments/results/h200/README.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ") // a sentence may wrap
		for _, m := range marked.FindAllStringSubmatch(text, -1) {
			checked++
			if got := count(m[2]); got != m[1] {
				t.Errorf("%s: %q: ktune plan --count %s says %s points", doc, m[0], m[2], got)
			}
		}
		for _, ix := range unmarked.FindAllStringSubmatchIndex(text, -1) {
			if strings.HasPrefix(text[ix[1]:], " (`ktune plan --count") {
				continue
			}
			t.Errorf("%s: %q: name the command that gives the count (N points (`ktune plan --count %s`))", doc, text[ix[0]:ix[1]], text[ix[2]:ix[3]])
		}
	}
	specs, _ := filepath.Glob(filepath.Join(root, "experiments", "*.yaml"))
	comment := regexp.MustCompile(`(?m)^#.*= (\d+) points`)
	for _, s := range specs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range comment.FindAllStringSubmatch(string(data), -1) {
			checked++
			rel, _ := filepath.Rel(root, s)
			if got := count(rel); got != m[1] {
				t.Errorf("%s: comment %q: ktune plan --count says %s", rel, m[0], got)
			}
		}
	}
	if checked < 4 {
		t.Errorf("checked %d counts: the README's frontier count and the specs' comments should be among them", checked)
	}
}
