package dispatch

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/internal/results"
)

// qlenRecords are batch-1 records of one shape at q_len 1, 4 and 4 with a
// soft-cap, each won by a different configuration: the table must keep
// them apart, in that order, and say which is which.
func qlenRecords() []results.Record {
	one := fixShape1
	four := fixShape1
	four.Attention.QLen = 4
	capped := four
	capped.Attention.Softcap = 50
	var recs []results.Record
	for i, c := range []struct {
		shape  results.Shape
		winner fixConfig
	}{{one, cfgB}, {four, cfgC}, {capped, cfgA}} {
		for j, cfg := range []fixConfig{cfgA, cfgB, cfgC} {
			us := 20.0
			if cfg == c.winner {
				us = 10
			}
			recs = append(recs, fixRecord(c.shape, 2048, fixSamples{cfg, noisy(us*1e3, uint64(10*i+j))}))
		}
	}
	// Out of order on purpose: the table sorts them.
	return append(recs[6:], recs[:6]...)
}

func TestQLenShapesKeptApart(t *testing.T) {
	tab, err := Build(qlenRecords(), fixSources, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Shapes) != 3 {
		t.Fatalf("%d shapes, want 3 (q_len 1, q_len 4, q_len 4 with a soft-cap)", len(tab.Shapes))
	}
	for i, want := range []struct {
		qlen    int
		options string
		variant string
		splits  int
	}{{1, "", "d2", 32}, {4, "", "d2", 64}, {4, "softcap=50", "r4", 32}} {
		st := tab.Shapes[i]
		if q, o := st.Shape.Attention.Queries(), optionsLabel(st.Shape.Attention); q != want.qlen || o != want.options {
			t.Errorf("shape %d: q_len %d options %q, want %d %q", i, q, o, want.qlen, want.options)
		}
		if r := st.Ranges[0]; r.Variant != want.variant || r.Splits != want.splits {
			t.Errorf("shape %d: %s SPLITS=%d, want %s SPLITS=%d", i, r.Variant, r.Splits, want.variant, want.splits)
		}
	}

	yml, hdr, _ := render(t, tab)
	var doc struct {
		Shapes []struct {
			QLen    int    `yaml:"q_len"`
			Options string `yaml:"options"`
		}
	}
	if err := yaml.Unmarshal(yml, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Shapes) != 3 || doc.Shapes[0].QLen != 0 || doc.Shapes[1].QLen != 4 || doc.Shapes[2].Options != "softcap=50" {
		t.Errorf("YAML shapes %+v: want q_len omitted at 1, 4, then options softcap=50", doc.Shapes)
	}
	for _, s := range []string{`1, 0, "", 1, 1, ktune_dispatch_ranges_0}`, `4, 0, "", 1, 1, ktune_dispatch_ranges_1}`, `4, 0, "softcap=50", 1, 1, ktune_dispatch_ranges_2}`} {
		if !strings.Contains(string(hdr), s) {
			t.Errorf("header lacks the shape entry ending %s", s)
		}
	}

	// The lookup finds each q_len's plain entry and never the capped one.
	probe := `#include <stdio.h>
#include "dispatch.h"
int main(void)
{
	int q;
	for (q = 1; q <= 4; q++) {
		const struct ktune_dispatch_shape *s = ktune_dispatch_find_shape(28, 4, 128, 1, q, 0, 1);
		printf("%d %s\n", q, s ? ktune_dispatch_find(s, 2048)->variant : "none");
	}
	return 0;
}
`
	got := runHeaderProbe(t, hdr, probe)
	if want := "1 d2\n2 none\n3 none\n4 d2\n"; string(got) != want {
		t.Errorf("lookups:\n%s\nwant:\n%s", got, want)
	}
}
