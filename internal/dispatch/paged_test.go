package dispatch

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// pagedRecords are batch-1 records of one shape at nkv 2048: contiguous
// configurations (r4 fastest of all), the same kernels built for 16-row
// pages (d2 SPLITS=32 fastest) and for 64-row pages (d2 SPLITS=64
// fastest), and one record whose PAGE_SIZE is not a number.
func pagedRecords() []results.Record {
	var recs []results.Record
	for i, c := range []struct {
		page   string // "" for a contiguous cache
		winner fixConfig
	}{{"", cfgA}, {"16", cfgB}, {"64", cfgC}, {"x", cfgA}} {
		for j, cfg := range []fixConfig{cfgA, cfgB, cfgC} {
			us := 20.0
			if cfg == c.winner {
				us = 10 + float64(i) // the contiguous winner is the fastest of all
			}
			r := fixRecord(fixShape1, 2048, fixSamples{cfg, noisy(us*1e3, uint64(10*i+j))})
			if c.page != "" {
				r.Config.Defines = append(r.Config.Defines, results.Define{Name: abi.DefinePageSize, Value: c.page})
				r.Config.Defines = r.Config.Defines.Sorted()
				r.Hash += "/" + c.page
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// TestPageSizeTablesKeptApart: a paged cache's page size keys its table
// as q_len does: the kernels built for 16-row pages are chosen among
// themselves, never the faster contiguous kernel, the tables go
// contiguous first and then by page size whatever the records' order,
// the YAML says page_size (omitted when contiguous), the header's lookup
// matches it, and a record whose page size cannot be read is left out.
func TestPageSizeTablesKeptApart(t *testing.T) {
	recs := pagedRecords()
	tab, err := Build(recs, fixSources, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Shapes) != 3 {
		t.Fatalf("%d tables, want 3 (contiguous, 16-row pages, 64-row pages)", len(tab.Shapes))
	}
	for i, want := range []struct {
		page    int
		variant string
		splits  int
	}{{0, "r4", 32}, {16, "d2", 32}, {64, "d2", 64}} {
		st := tab.Shapes[i]
		r := st.Ranges[0]
		if st.PageSize != want.page || len(st.Ranges) != 1 || r.Variant != want.variant || r.Splits != want.splits {
			t.Errorf("table %d: page size %d, %d ranges, %s SPLITS=%d: want page size %d, %s SPLITS=%d",
				i, st.PageSize, len(st.Ranges), r.Variant, r.Splits, want.page, want.variant, want.splits)
		}
		v, ok := (&results.Config{Defines: r.Defines}).Define(abi.DefinePageSize)
		if got := map[bool]string{true: v}[ok]; got != map[int]string{0: "", 16: "16", 64: "64"}[want.page] {
			t.Errorf("table %d: the chosen configuration's PAGE_SIZE is %q", i, got)
		}
	}
	if !slices.ContainsFunc(tab.Warnings, func(w string) bool { return strings.Contains(w, "unreadable page size") }) {
		t.Errorf("warnings %q: want the record with PAGE_SIZE=x left out", tab.Warnings)
	}

	yml, hdr, _ := render(t, tab)
	slices.Reverse(recs)
	again, err := Build(recs, fixSources, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if y2, h2, _ := render(t, again); !bytes.Equal(yml, y2) || !bytes.Equal(hdr, h2) {
		t.Error("the records' order changed the table")
	}
	var doc struct {
		Shapes []map[string]any
	}
	if err := yaml.Unmarshal(yml, &doc); err != nil {
		t.Fatal(err)
	}
	for i, want := range []any{nil, 16, 64} {
		if got := doc.Shapes[i]["page_size"]; got != want {
			t.Errorf("YAML table %d: page_size %v, want %v", i, got, want)
		}
	}
	for _, s := range []string{`, 1, 0, "", 1, 1, ktune_dispatch_ranges_0}`, `, 1, 16, "", 1, 1, ktune_dispatch_ranges_1}`, `, 1, 64, "", 1, 1, ktune_dispatch_ranges_2}`, "page size 16)"} {
		if !strings.Contains(string(hdr), s) {
			t.Errorf("header lacks %s", s)
		}
	}

	probe := `#include <stdio.h>
#include "dispatch.h"
int main(void)
{
	int pages[] = {0, 16, 32, 64}, i;
	for (i = 0; i < 4; i++) {
		const struct ktune_dispatch_shape *s = ktune_dispatch_find_shape(28, 4, 128, 1, 1, pages[i], 1);
		const struct ktune_dispatch_range *r = s ? ktune_dispatch_find(s, 2048) : 0;
		printf("%d %s %d\n", pages[i], r ? r->variant : "none", r ? r->splits : 0);
	}
	return 0;
}
`
	got := runHeaderProbe(t, hdr, probe)
	if want := "0 r4 32\n16 d2 32\n32 none 0\n64 d2 64\n"; string(got) != want {
		t.Errorf("lookups:\n%s\nwant:\n%s", got, want)
	}
}
