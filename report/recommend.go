package report

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/dispatch"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// DefaultMaxArms is the arm limit of the recommendation report.md opens
// with: an engine ships a dispatch of a few arms, not one per context
// length.
const DefaultMaxArms = 3

// A Recommendation is, for one shape with a landed kernel, the dispatch
// of at most MaxArms nkv ranges that `ktune tune --max-arms` emits from
// the same files, with per measured nkv what its simplicity costs against
// that nkv's winner and what it gains over the landed kernel and the
// references.
type Recommendation struct {
	Device  string `json:"device"`
	Shape   string `json:"shape"`
	Landed  string `json:"landed"`
	MaxArms int    `json:"max_arms"`
	// Arms are the dispatch's ranges, ascending; MinNKV of the first is 1
	// and MaxNKV of the last 0 (no upper bound), as in a dispatch table.
	Arms  []RecArm  `json:"arms"`
	Cells []RecCell `json:"cells"`
	// Missing names each arm not measured at a measured nkv, and Sweeps
	// the commands that measure them.
	Missing []dispatch.Missing `json:"missing,omitempty"`
	Sweeps  []string           `json:"sweeps,omitempty"`
	// NoLanded lists the measured nkv where the arm was measured and the
	// landed kernel was not: no speedup over landed is claimed there.
	NoLanded []int `json:"no_landed,omitempty"`
	// Command emits the dispatch as a table (YAML and a C header).
	Command string `json:"command"`
	// Error says why no recommendation could be made from the files.
	Error string `json:"error,omitempty"`
}

// A RecArm is one range of the recommended dispatch.
type RecArm struct {
	MinNKV int    `json:"min_nkv"`
	MaxNKV int    `json:"max_nkv"`
	Name   string `json:"name"`   // the short name of What to ship, else the full label
	Config string `json:"config"` // ConfigLabel
}

// A RecCell is the recommended arm at one measured nkv.
type RecCell struct {
	NKV    int    `json:"nkv"`
	Arm    string `json:"arm"`
	Config string `json:"config"` // the arm's ConfigLabel
	// Unmeasured: the arm was not measured here (no times).
	Unmeasured bool `json:"unmeasured,omitempty"`
	Median     CI   `json:"median_ns"`
	// Best is this nkv's winner under the same rule without an arm limit;
	// Cost is the arm against it (Ratio = arm time / best time, ≥ 1 when
	// the simplicity costs), nil where the arm is the winner.
	Best string   `json:"best"`
	Cost *Speedup `json:"cost,omitempty"`
	// BestNS is the winner's median where the arm was not measured.
	BestNS float64 `json:"best_ns,omitempty"`
	// Versus are the landed kernel and the references, as in What to ship.
	Versus []Speedup `json:"versus"`
}

// recommend builds the recommendation of every shape of "what to ship"
// with a landed kernel. recs and sources are Build's input.
func (rep *Report) recommend(recs []results.Record, sources []string, maxArms int) {
	for i := range rep.Ship {
		s := &rep.Ship[i]
		if s.Landed == "" {
			continue
		}
		rep.Recommend = append(rep.Recommend, rep.recommendShape(s, recs, sources, maxArms))
	}
}

// recommendShape asks the dispatch package, over the records of the files
// the command names (in its order) on the shape's device, for the table
// with and without the arm limit.
func (rep *Report) recommendShape(s *ShipShape, recs []results.Record, sources []string, maxArms int) Recommendation {
	rc := Recommendation{Device: s.Device, Shape: s.Shape, Landed: s.Landed, MaxArms: maxArms}
	from := "RESULTS"
	if len(s.Sources) > 0 {
		from = strings.Join(s.Sources, " ")
	}
	rc.Command = fmt.Sprintf("ktune tune --from %s --by-dims --max-arms %d -o out/dispatch/%s", from, maxArms, slugify(s.Shape))
	var in []results.Record
	if len(s.Sources) == 0 || len(sources) != len(recs) {
		in = recs
	} else {
		for _, f := range s.Sources {
			for j := range recs {
				if sources[j] == f {
					in = append(in, recs[j])
				}
			}
		}
	}
	in = slices.DeleteFunc(slices.Clone(in), func(r results.Record) bool { return r.Env.Device != s.Device })
	limited, err := dispatch.Build(in, nil, dispatch.Options{MaxArms: maxArms, ByDims: true})
	if err != nil {
		rc.Error = err.Error()
		return rc
	}
	free, err := dispatch.Build(in, nil, dispatch.Options{ByDims: true})
	if err != nil {
		rc.Error = err.Error()
		return rc
	}
	lt, ft := matchTable(limited, s.Dims), matchTable(free, s.Dims)
	if lt == nil || ft == nil {
		rc.Error = "the dispatch table of these files has no table of this shape"
		return rc
	}
	rows := rep.rowsOf(s.Device, s.Dims)
	for _, r := range lt.Ranges {
		rc.Arms = append(rc.Arms, RecArm{MinNKV: r.MinNKV, MaxNKV: r.MaxNKV, Name: rep.shortName(rangeConfig(r)), Config: rangeConfig(r)})
		for _, p := range r.Picks {
			c := rep.recCell(rows, s.Dims.Capacity, r, p, ft)
			if !c.Unmeasured && (len(c.Versus) == 0 || c.Versus[0].Against != "landed") {
				rc.NoLanded = append(rc.NoLanded, c.NKV)
			}
			rc.Cells = append(rc.Cells, c)
		}
	}
	rc.Missing = lt.Missing
	rc.Sweeps = sweepCommands(lt.Missing, s.Shape)
	return rc
}

// matchTable is the table of shape dims (capacity aside), contiguous
// cache first.
func matchTable(t *dispatch.Table, dims results.Shape) *dispatch.ShapeTable {
	dims.Capacity, dims.Name = 0, ""
	var out *dispatch.ShapeTable
	for i := range t.Shapes {
		st := &t.Shapes[i]
		s := st.Shape
		s.Name = ""
		if s == dims && (out == nil || st.PageSize < out.PageSize) {
			out = st
		}
	}
	return out
}

// rangeConfig is the ConfigLabel of a dispatch range's configuration.
func rangeConfig(r dispatch.Range) string {
	c := results.Config{Variant: r.Variant, Defines: r.Defines, Splits: r.Splits}
	return ConfigLabel(&c)
}

// missingConfig is the ConfigLabel of a missing point's configuration.
func missingConfig(m dispatch.Missing) string {
	c := results.Config{Variant: m.Variant, Defines: m.Defines}
	if v, ok := c.Define("SPLITS"); ok {
		c.Splits, _ = strconv.Atoi(v)
	}
	return ConfigLabel(&c)
}

func (rep *Report) shortName(config string) string {
	for _, c := range rep.ShipConfigs {
		if c.Config == config {
			return c.Name
		}
	}
	return config
}

// rowsOf returns the rows of a device and shape, capacity aside (a
// dispatch table does not tell capacities apart), the shape's own
// capacity first.
func (rep *Report) rowsOf(device string, dims results.Shape) []*Row {
	var own, other []*Row
	key := dims
	key.Capacity, key.Name = 0, ""
	for i := range rep.Rows {
		r := &rep.Rows[i]
		s := r.Shape
		s.Capacity, s.Name = 0, ""
		if r.Device != device || s != key || r.Fixture {
			continue
		}
		if r.Shape.Capacity == dims.Capacity {
			own = append(own, r)
		} else {
			other = append(other, r)
		}
	}
	return append(own, other...)
}

// rowAt finds the row of config at nkv with cold samples.
func rowAt(rows []*Row, config string, nkv int) *Row {
	for _, r := range rows {
		if r.NKV == nkv && ConfigLabel(r.Config()) == config && comparable(r) {
			return r
		}
	}
	return nil
}

// recCell compares the arm at one nkv with that nkv's winner, the landed
// kernel and the references.
func (rep *Report) recCell(rows []*Row, capacity int, r dispatch.Range, p dispatch.Pick, free *dispatch.ShapeTable) RecCell {
	cfg := rangeConfig(r)
	cell := RecCell{NKV: p.NKV, Arm: rep.shortName(cfg), Config: cfg}
	var best string
	for _, fr := range free.Ranges {
		for _, fp := range fr.Picks {
			if fp.NKV == p.NKV {
				best = rangeConfig(fr)
			}
		}
	}
	cell.Best = rep.shortName(best)
	arm := rowAt(rows, cfg, p.NKV)
	if p.Rule == dispatch.RuleUnmeasured || arm == nil {
		cell.Unmeasured = true
		if b := rowAt(rows, best, p.NKV); b != nil {
			cell.BestNS = b.Probe(shipProbe).MedianNS
		}
		return cell
	}
	st := arm.Probe(shipProbe)
	c := stats.Compare(st.Samples, st.Samples, decision.Alpha)
	cell.Median = CI{Center: c.Old.Center}
	if c.Old.Lo > 0 && c.Old.Hi > c.Old.Lo {
		cell.Median.Lo, cell.Median.Hi = c.Old.Lo, c.Old.Hi
	}
	if best != cfg {
		if b := rowAt(rows, best, p.NKV); b != nil {
			// speedup gives best/arm; the cost is its inverse, arm/best.
			sp := speedup(st.Samples, b, "best")
			inv := func(x float64) float64 {
				if x <= 0 {
					return 0
				}
				return 1 / x
			}
			sp.Ratio = CI{Center: inv(sp.Ratio.Center), Lo: inv(sp.Ratio.Hi), Hi: inv(sp.Ratio.Lo)}
			cell.Cost = &sp
		}
	}
	// The baselines are the shape's own, as in What to ship: another
	// capacity's landed record is another problem's measurement.
	var landed *Row
	refs := map[string]*Row{}
	for _, r := range rows {
		if r.NKV != p.NKV || !comparable(r) || r.Shape.Capacity != capacity {
			continue
		}
		med := r.Probe(shipProbe).MedianNS
		if r.Landed && (landed == nil || med < landed.Probe(shipProbe).MedianNS) {
			landed = r
		}
		if r.Reference && (refs[r.Variant] == nil || med < refs[r.Variant].Probe(shipProbe).MedianNS) {
			refs[r.Variant] = r
		}
	}
	if landed != nil {
		cell.Versus = append(cell.Versus, speedup(st.Samples, landed, "landed"))
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cell.Versus = append(cell.Versus, speedup(st.Samples, refs[n], n))
	}
	return cell
}

// sweepCommands turns missing points into one sweep per spec and
// configuration, the nkv in one filter.
func sweepCommands(missing []dispatch.Missing, shape string) []string {
	type key struct{ spec, filter string }
	nkvs := map[key][]string{}
	var order []key
	for _, m := range missing {
		terms := []string{"variant=" + m.Variant}
		for _, d := range results.Defines(m.Defines).Own() {
			terms = append(terms, d.Name+"="+d.Value)
		}
		k := key{m.Spec, strings.Join(terms, ",")}
		if nkvs[k] == nil {
			order = append(order, k)
		}
		nkvs[k] = append(nkvs[k], fmt.Sprint(m.NKV))
	}
	var out []string
	for _, k := range order {
		spec := path.Join("experiments", k.spec+".yaml")
		out = append(out, fmt.Sprintf("ktune sweep %s -o out/cover-%s --only '%s,nkv=%s'", spec, slugify(shape), k.filter, strings.Join(nkvs[k], "|")))
	}
	return out
}
