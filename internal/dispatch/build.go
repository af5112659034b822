package dispatch

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
)

// A candidate is one configuration's measurement at one shape and nkv
// (decision.Candidate).
type candidate = decision.Candidate

// Build chooses, per shape and measured nkv, the fastest configuration
// that passed its gates and merges the choices into nkv ranges (see the
// package documentation for the rules). sources only label the output.
func Build(recs []results.Record, sources []Source, opt Options) (*Table, error) {
	if opt.Probe == "" {
		opt.Probe = results.ProbeCold
	}
	if opt.Alpha == 0 {
		opt.Alpha = decision.Alpha
	}
	t := &Table{Probe: opt.Probe, Alpha: opt.Alpha, Sources: sources, MaxArms: opt.MaxArms}
	if opt.ByDims {
		recs = unifyLabels(recs)
		opt.Failed = unifyLabels(opt.Failed)
	}

	groups := map[tableKey]map[int]map[string]*candidate{}
	devices := map[string]bool{}
	seen := map[tableKey]map[int]bool{} // every measured nkv, passing or not
	failed := failedConfigs(append(slices.Clip(recs), opt.Failed...))
	fixtures := results.FixtureSpecs(recs)
	excluded := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if opt.Spec != "" && r.Config.Spec != opt.Spec {
			continue
		}
		if ok, why := launchable(r, fixtures); !ok {
			excluded[why]++
			continue
		}
		key := keyOf(&r.Config)
		if seen[key] == nil {
			seen[key] = map[int]bool{}
		}
		seen[key][r.Config.NKV] = true
		if r.Status != results.StatusOK || !r.GatesPass() {
			continue
		}
		m := r.Probe(opt.Probe)
		if m == nil || len(m.SamplesNS) == 0 {
			continue
		}
		if failed[key][decision.ConfigID(&r.Config)] {
			excluded["failed elsewhere"]++
			continue
		}
		devices[r.Env.Device] = true
		if groups[key] == nil {
			groups[key] = map[int]map[string]*candidate{}
		}
		byNKV := groups[key]
		if byNKV[r.Config.NKV] == nil {
			byNKV[r.Config.NKV] = map[string]*candidate{}
		}
		c := decision.NewCandidate(r, m)
		// A later file's measurement of the same configuration replaces an
		// earlier one: files are given oldest first.
		byNKV[r.Config.NKV][c.ID] = c
	}
	if len(groups) == 0 {
		of := ""
		if opt.Spec != "" {
			of = fmt.Sprintf(" of spec %q", opt.Spec)
		}
		return nil, fmt.Errorf("building dispatch table: no record%s with status ok, passing gates and %s samples", of, opt.Probe)
	}
	if len(devices) > 1 {
		return nil, fmt.Errorf("building dispatch table: records from several devices (%s): tune one device at a time",
			strings.Join(sortedKeys(devices), ", "))
	}
	t.Device = sortedKeys(devices)[0]
	t.Warnings = append(uncovered(seen, groups, opt.Probe), excludedNote(excluded)...)

	keys := make([]tableKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		decs := decision.Decide(groups[k], opt.Alpha, decision.TiesWithinNoise)
		var weights []float64
		if opt.Weights != nil && opt.MaxArms > 0 {
			nkvs := make([]int, len(decs))
			for i, d := range decs {
				nkvs[i] = d.NKV
			}
			w, err := opt.Weights(k.shape.Batch, nkvs)
			if err != nil {
				return nil, fmt.Errorf("building dispatch table of %s: %w", shapeLabel(k), err)
			}
			if slices.ContainsFunc(w, func(x float64) bool { return x > 0 }) {
				weights = w
			} else {
				t.Warnings = append(t.Warnings, fmt.Sprintf("%s: the workload has no step at batch %d: its arms weigh every measured nkv alike", shapeLabel(k), k.shape.Batch))
			}
		}
		missing := limitArms(decs, opt.MaxArms, opt.Alpha, weights)
		t.Shapes = append(t.Shapes, ShapeTable{Shape: k.shape, PageSize: k.pageSize, Ranges: mergeRanges(decs), Missing: missing})
		for _, m := range missing {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s: nkv %d: %s, an arm of the table, was not measured here: it may be faster or slower than the table says", shapeLabel(k), m.NKV, m.Config))
		}
	}
	return t, nil
}

// shapeKey drops what does not select a kernel: the label of a shape is
// kept (it names the table), the buffer capacity is not.
func shapeKey(s results.Shape) results.Shape {
	s.Capacity = 0
	return s
}

func compareShapes(a, b results.Shape) int {
	return cmp.Or(
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Heads, b.Heads),
		cmp.Compare(a.KVHeads, b.KVHeads),
		cmp.Compare(a.HeadDim, b.HeadDim),
		cmp.Compare(a.KVDtype, b.KVDtype),
		cmp.Compare(a.KVScale, b.KVScale),
		cmp.Compare(a.Batch, b.Batch),
		compareAttention(a.Attention, b.Attention),
	)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// uncovered lists the shapes and measured nkv where no configuration
// qualified: the table still covers them, by the neighbouring ranges, and
// the user should know that this is extrapolation.
func uncovered(seen map[tableKey]map[int]bool, groups map[tableKey]map[int]map[string]*candidate, p results.Probe) []string {
	shapes := make([]tableKey, 0, len(seen))
	for s := range seen {
		shapes = append(shapes, s)
	}
	slices.SortFunc(shapes, compareKeys)
	var out []string
	for _, s := range shapes {
		if groups[s] == nil {
			out = append(out, fmt.Sprintf("%s: no configuration passed its gates with %s samples; shape left out", shapeLabel(s), p))
			continue
		}
		var missing []int
		for n := range seen[s] {
			if groups[s][n] == nil {
				missing = append(missing, n)
			}
		}
		slices.Sort(missing)
		for _, n := range missing {
			out = append(out, fmt.Sprintf("%s: nkv %d: no configuration passed its gates with %s samples; covered by the neighbouring ranges", shapeLabel(s), n, p))
		}
	}
	return out
}

// shapeLabel names a table's shape and page size in messages and tables.
func shapeLabel(k tableKey) string {
	s := k.shape
	name := s.Name
	if name == "" {
		name = "shape"
	}
	dtype := string(s.KVDtype)
	if s.KVScale != "" {
		dtype += " scale/" + s.KVScale
	}
	paged := ""
	if k.pageSize > 0 {
		paged = ", page size " + strconv.Itoa(k.pageSize)
	}
	return fmt.Sprintf("%s (h%d/kv%d/d%d %s, batch %d%s%s)", name, s.Heads, s.KVHeads, s.HeadDim, dtype, s.Batch, attentionSuffix(s.Attention), paged)
}

// formatNS prints a duration in ns with one decimal, without exponent, so
// that YAML and header diffs stay readable.
func formatNS(ns float64) string { return strconv.FormatFloat(ns, 'f', 1, 64) }
