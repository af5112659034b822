package plan

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

const slicePath = "../experiments/slice.yaml"

// sliceWith reads experiments/slice.yaml with edit applied to its text and
// the axes given, and builds its plan over the real kernels.
func sliceWith(t *testing.T, edit func(string) string, axes ...spec.AxisOverride) (*spec.Spec, *Plan, error) {
	t.Helper()
	data, err := os.ReadFile(slicePath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.ParseWith(slicePath, []byte(edit(string(data))), variants.Builtins(), axes)
	if err != nil {
		return nil, nil, err
	}
	p, err := Build(s, "sm_90")
	return s, p, err
}

func same(s string) string { return s }

func hashes(p *Plan) []string {
	var out []string
	for _, pt := range p.Points {
		out = append(out, pt.Hash)
	}
	return out
}

// TestAxisOverrideKeepsHashes: --axis with the spec's own values plans the
// same points under the same hashes; a narrower list plans exactly the
// points of the full plan at those values, each under its hash there.
func TestAxisOverrideKeepsHashes(t *testing.T) {
	_, full, err := sliceWith(t, same)
	if err != nil {
		t.Fatal(err)
	}
	_, again, err := sliceWith(t, same, spec.AxisOverride{Name: "nkv", Values: []string{"1", "29", "52", "512", "1641", "2048", "8192", "32768"}},
		spec.AxisOverride{Name: "SPLITS", Values: []string{"8", "16", "32", "64"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hashes(full), hashes(again)) {
		t.Errorf("the spec's own values as --axis changed the plan:\n%v\n%v", hashes(full), hashes(again))
	}
	_, narrow, err := sliceWith(t, same, spec.AxisOverride{Name: "nkv", Values: []string{"8192", "2048"}}, spec.AxisOverride{Name: "SPLITS", Values: []string{"32"}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, pt := range full.Points {
		if (pt.Config.NKV == 2048 || pt.Config.NKV == 8192) && pt.Config.Splits == 32 {
			want = append(want, pt.Hash)
		}
	}
	got := hashes(narrow)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) != 4 || !slices.Equal(got, want) {
		t.Errorf("narrowed plan hashes %v, want the full plan's %v", got, want)
	}
	// A value the spec does not list is planned too (an override, not
	// only a filter).
	_, wider, err := sliceWith(t, same, spec.AxisOverride{Name: "nkv", Values: []string{"4096"}})
	if err != nil || len(wider.Points) != 8 || wider.Points[0].Config.NKV != 4096 {
		t.Errorf("nkv=4096: %v, %d points", err, len(wider.Points))
	}
}

// TestAxisOverrideErrors: a mistake in --axis is the spec's kind of error,
// file:line:col at the axis it replaces; an axis the spec lacks is named.
func TestAxisOverrideErrors(t *testing.T) {
	for _, tc := range []struct {
		o    spec.AxisOverride
		want string
	}{
		{spec.AxisOverride{Name: "nkv", Values: []string{"0"}}, "slice.yaml:12:8: axes.nkv (--axis): 0 is not a context length"},
		{spec.AxisOverride{Name: "SPLITS", Values: []string{"8", "8"}}, "slice.yaml:13:11: axes.SPLITS (--axis): value 8 repeated"},
		{spec.AxisOverride{Name: "nkv", Values: []string{"big"}}, "slice.yaml:12:8: axes.nkv (--axis): want an integer"},
		{spec.AxisOverride{Name: "WARPS", Values: []string{"2"}}, "--axis WARPS: the spec has no axis WARPS (its axes: nkv, SPLITS)"},
	} {
		_, _, err := sliceWith(t, same, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	for _, arg := range []string{"nkv", "=1", "nkv=", " =2"} {
		if _, err := spec.ParseAxisOverride(arg); err == nil {
			t.Errorf("--axis %q: no error", arg)
		}
	}
	if o, err := spec.ParseAxisOverride("nkv=2048, 8192"); err != nil || o.Name != "nkv" || !slices.Equal(o.Values, []string{"2048", "8192"}) {
		t.Errorf("nkv=2048, 8192: %+v, %v", o, err)
	}
}

// TestRestrictPrunes: restrict: keeps exactly the points of the full plan
// that satisfy every restriction, under their hashes; each restriction's
// count is the points it removed first; CountPoints agrees with Build.
func TestRestrictPrunes(t *testing.T) {
	_, full, err := sliceWith(t, same)
	if err != nil {
		t.Fatal(err)
	}
	restrict := func(s string) string {
		return strings.Replace(s, "\naxes:", "\nrestrict: [\"SPLITS <= 32\", 'SPLITS * nkv <= 262144', \"heads / kv_heads == group\"]\naxes:", 1)
	}
	s, p, err := sliceWith(t, restrict)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	removed := []int{0, 0, 0}
	for _, pt := range full.Points {
		switch {
		case pt.Config.Splits > 32:
			removed[0]++
		case pt.Config.Splits*pt.Config.NKV > 262144:
			removed[1]++
		default:
			want = append(want, pt.Hash)
		}
	}
	if !slices.Equal(hashes(p), want) {
		t.Errorf("restricted plan %v\nwant %v", hashes(p), want)
	}
	if !slices.Equal(p.Restricted, removed) || removed[0] == 0 || removed[1] == 0 {
		t.Errorf("removed %v, want %v (both restrictions remove something)", p.Restricted, removed)
	}
	c := CountPoints(s)
	if c.Err != nil || c.Points != len(p.Points) || !slices.Equal(c.Restricted, p.Restricted) {
		t.Errorf("count: %d points, removed %v, %v; build: %d, %v", c.Points, c.Restricted, c.Err, len(p.Points), p.Restricted)
	}
	var table strings.Builder
	if err := p.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), `restrict[0] "SPLITS <= 32": 16 points removed`) {
		t.Errorf("the table does not say what restrict[0] removed:\n%s", table.String())
	}
}

// TestRestrictErrors: every mistake in restrict: is file:line:col at the
// character it is about.
func TestRestrictErrors(t *testing.T) {
	for _, tc := range []struct {
		restrict, want string
	}{
		{`["SPLITS <= 3 +"]`, "slice.yaml:11:26: restrict[0] \"SPLITS <= 3 +\": expected"},
		{`["SPLITS"]`, "slice.yaml:11:13: restrict[0] \"SPLITS\": want a comparison"},
		{`["SPLITS", "WARPS < 2"]`, "slice.yaml:11:13: restrict[0]"},
		{`["WARPS < 2"]`, "slice.yaml:11:13: restrict[0] \"WARPS < 2\": WARPS is not an axis, a variant's define or a shape symbol"},
		{`{a: 1}`, "slice.yaml:11:11: restrict: want a list"},
	} {
		edit := func(s string) string { return strings.Replace(s, "\naxes:", "\nrestrict: "+tc.restrict+"\naxes:", 1) }
		_, _, err := sliceWith(t, edit)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("restrict: %s: error %v, want %q", tc.restrict, err, tc.want)
		}
	}
	// An expression that cannot be evaluated at some point stops the plan
	// there, at the column of the division.
	edit := func(s string) string {
		return strings.Replace(s, "\naxes:", "\nrestrict: [\"SPLITS / (SPLITS - 8) < 9\"]\naxes:", 1)
	}
	s, _, err := sliceWith(t, edit)
	want := `slice.yaml:11:20: restrict[0] "SPLITS / (SPLITS - 8) < 9" at shape 7b, NR=4 SPLITS=8, nkv 1: division by zero`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	if c := CountPoints(s); c.Err == nil || !strings.Contains(c.Err.Error(), want) {
		t.Errorf("count: error %v, want %q", c.Err, want)
	}
}

// TestRestrictQLen: q_len is the shape's query tokens per sequence (1
// without the option), so "GN <= q_len" keeps a multi-token tuning off
// the one-token shapes and leaves the variants without GN alone.
func TestRestrictQLen(t *testing.T) {
	const path = "../experiments/h200-frontier4-kernels.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	build := func(text string) *Plan {
		s, err := spec.Parse(path, []byte(text), variants.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		p, err := Build(s, "sm_90")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	restricted := build(string(data))
	if !strings.Contains(string(data), "\nrestrict: [\"GN <= q_len\"]\n") {
		t.Fatal("the spec no longer restricts GN to q_len")
	}
	full := build(strings.Replace(string(data), "\nrestrict: [\"GN <= q_len\"]\n", "\n", 1))
	var want []string
	removed := 0
	for _, pt := range full.Points {
		gn := 1
		for _, d := range pt.Config.Defines {
			if d.Name == "GN" {
				gn, _ = strconv.Atoi(d.Value)
			}
		}
		if gn > pt.Config.Shape.Attention.Queries() {
			removed++
			continue
		}
		want = append(want, pt.Hash)
	}
	if removed == 0 || !slices.Equal(hashes(restricted), want) {
		t.Errorf("restricted plan: %d points, want the %d of the full plan with GN <= q_len (%d removed)", len(restricted.Points), len(want), removed)
	}
	for _, pt := range restricted.Points {
		if pt.Config.Shape.Attention.Queries() == 1 && strings.Contains(pt.Config.Variant, "q4") {
			t.Errorf("%s planned at the one-token shape %s", pt.Config.Variant, pt.Config.Shape.Name)
		}
	}
}
