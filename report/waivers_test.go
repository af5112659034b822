package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ktune/ktune/plan"
)

// A configuration of a graph: never variant ran no replay gate: report.md
// says so, and why, in its Waivers section, once per configuration, after
// the gate failures; a report without waivers has no such section.
func TestMarkdownSaysReplayNotRun(t *testing.T) {
	recs := loadH200(t, "slice.jsonl")
	md := func() string {
		rep, err := Build(recs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := rep.WriteMarkdown(&b, nil, "."); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if s := md(); strings.Contains(s, "## Waivers") {
		t.Fatalf("a report of records without waivers has a Waivers section")
	}
	marked := 0
	for i := range recs {
		if r := &recs[i]; r.Config.Variant == "r4" && r.Config.Splits == 16 {
			r.Waivers = []string{plan.NeverCapturedText}
			marked++
		}
	}
	if marked < 2 {
		t.Fatalf("%d records of r4 SPLITS=16 marked; want several, to show one line per configuration", marked)
	}
	s := md()
	failures, waivers := strings.Index(s, "\n## Gate failures\n"), strings.Index(s, "\n## Waivers\n")
	if waivers < 0 || waivers < failures {
		t.Fatalf("report.md: gate failures at byte %d, waivers at %d", failures, waivers)
	}
	want := "\n- 7b r4 SPLITS=16 NR=4: " + plan.NeverCapturedText + "\n"
	if n := strings.Count(s, want); n != 1 {
		t.Errorf("report.md says %d times %q, want once:\n%s", n, want, s[waivers:])
	}
}
