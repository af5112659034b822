package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ktune/ktune/internal/golden"
)

// shipSection renders report.md over every committed H200 result and
// returns its opening: the "What to ship" section, up to the environment.
func shipSection(t *testing.T) (*Report, string) {
	t.Helper()
	rep, err := Build(allH200(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteMarkdown(&buf, nil, "."); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	end := strings.Index(md, "\n## Environment")
	if end < 0 {
		t.Fatal("report.md has no environment section")
	}
	return rep, md[:end+1]
}

// The opening of report.md over the committed results, as a reader's
// first screen: a change to what it says is reviewed as a diff.
func TestOpeningGolden(t *testing.T) {
	t.Parallel()
	_, open := shipSection(t)
	golden.Check(t, "testdata/h200-opening.md.golden", []byte(open))
}

// The opening puts the shapes with a landed kernel first, each table with
// a "× landed" column, then the others under one heading and without it;
// every ship cell is a short name the configurations table defines; every
// length marked † has its note; no table row runs past 150 characters.
func TestOpeningLayout(t *testing.T) {
	t.Parallel()
	rep, open := shipSection(t)
	withAt := strings.Index(open, "\n### Shapes with a landed kernel\n")
	withoutAt := strings.Index(open, "\n### Shapes without a landed kernel\n")
	configsAt := strings.Index(open, "\n### Configurations\n")
	landed := 0
	for _, s := range rep.Ship {
		if s.Landed != "" {
			landed++
		}
	}
	if landed == 0 || landed == len(rep.Ship) {
		t.Fatalf("%d of %d shapes landed: the committed results should hold both kinds", landed, len(rep.Ship))
	}
	if !(withAt > 0 && withAt < withoutAt && withoutAt < configsAt) {
		t.Fatalf("headings at %d (landed), %d (not landed), %d (configurations): want them in that order", withAt, withoutAt, configsAt)
	}
	if strings.Contains(open[:withAt], "\n**") {
		t.Error("a shape's table comes before the landed shapes' heading")
	}
	names := map[string]bool{}
	for _, c := range rep.ShipConfigs {
		if names[c.Name] {
			t.Errorf("short name %q names two configurations", c.Name)
		}
		names[c.Name] = true
	}
	section, tables := "", 0
	header := ""
	for line := range strings.Lines(open) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "### "):
			section = line
			continue
		case strings.HasPrefix(line, "| nkv range"):
			header = line
			tables++
			hasLanded := strings.Contains(line, "× landed")
			if want := section == "### Shapes with a landed kernel"; hasLanded != want {
				t.Errorf("under %q a table header %q: × landed column %v, want %v", section, line, hasLanded, want)
			}
		}
		if !strings.HasPrefix(line, "|") || section == "### Configurations" || strings.HasPrefix(line, "|:") || line == header {
			continue
		}
		if n := utf8.RuneCountInString(line); n > 150 {
			t.Errorf("table row of %d characters: %s", n, line)
		}
		cells := strings.Split(line, "|")
		nkv, ship := strings.TrimSpace(cells[2]), strings.TrimSuffix(strings.TrimSpace(cells[3]), " (landed)")
		if ship != "" && !names[ship] {
			t.Errorf("ship cell %q is no short name of the configurations table", ship)
		}
		if n, ok := strings.CutSuffix(nkv, " "+unmeasuredMark); ok && !hasNote(open, n) {
			t.Errorf("nkv %s is marked %s with no note", n, unmeasuredMark)
		}
	}
	if tables != len(rep.Ship) {
		t.Errorf("%d tables for %d shapes", tables, len(rep.Ship))
	}
}

// A shipped configuration that wins at an nkv where the configuration
// shipped next to it was not measured is marked there, and only there.
func TestShipMarksUnmeasured(t *testing.T) {
	ranges := []ShipRange{
		{Config: "a SPLITS=1", Points: []ShipPoint{{NKV: 1}, {NKV: 2}}},
		{Config: "b SPLITS=1", Points: []ShipPoint{{NKV: 3}}},
		{Config: "a SPLITS=1", Points: []ShipPoint{{NKV: 4}}},
	}
	measured := map[int]map[string]bool{
		1: {"a SPLITS=1": true, "b SPLITS=1": true},
		2: {"a SPLITS=1": true},
		3: {"b SPLITS=1": true},
		4: {"a SPLITS=1": true, "b SPLITS=1": true},
	}
	markUnmeasured(ranges, measured)
	got := map[int]string{}
	for _, rg := range ranges {
		for _, pt := range rg.Points {
			got[pt.NKV] = strings.Join(pt.Unmeasured, ",")
		}
	}
	want := map[int]string{1: "", 2: "b SPLITS=1", 3: "a SPLITS=1", 4: ""}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("nkv %d: unmeasured %q, want %q", n, got[n], w)
		}
	}
}

// Short names keep only the defines that tell a variant's shipped
// configurations apart, and the variant alone when it ships one.
func TestShortNames(t *testing.T) {
	got := shortNames("d2", []string{"d2 SPLITS=8 NR=4", "d2 SPLITS=64 NR=4"})
	if got["d2 SPLITS=8 NR=4"] != "d2 SPLITS=8" || got["d2 SPLITS=64 NR=4"] != "d2 SPLITS=64" {
		t.Errorf("two d2 configurations: %v", got)
	}
	if got := shortNames("mma-b1", []string{"mma-b1 SPLITS=64 CW=2 NR=1"}); got["mma-b1 SPLITS=64 CW=2 NR=1"] != "mma-b1" {
		t.Errorf("one configuration: %v", got)
	}
}

// hasNote reports whether md holds a † note naming nkv n.
func hasNote(md, n string) bool {
	for line := range strings.Lines(md) {
		at, ok := strings.CutPrefix(line, "- "+unmeasuredMark+" nkv ")
		if !ok {
			continue
		}
		list, _, _ := strings.Cut(at, ":")
		for _, x := range strings.Split(list, ", ") {
			if x == n {
				return true
			}
		}
	}
	return false
}
