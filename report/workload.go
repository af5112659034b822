package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/workload"
)

// A WorkloadView is the report under an engine's traffic (Options.Workload):
// per shape with a landed kernel and steps at its batch, the expected
// attention time of one decode step under each candidate.
type WorkloadView struct {
	Name   string          `json:"name"`
	Source string          `json:"source"`
	Notes  []string        `json:"notes,omitempty"`
	Shapes []WorkloadShape `json:"shapes"`
}

// A WorkloadShape is one shape's candidates under the workload's steps
// at its batch.
type WorkloadShape struct {
	Device string `json:"device"`
	Shape  string `json:"shape"`
	Batch  int    `json:"batch"`
	// Share is the part of the workload's steps at this batch; the times
	// are per step of this batch.
	Share      float64             `json:"share"`
	Candidates []WorkloadCandidate `json:"candidates"` // fastest first; landed among them
	// Skipped names the candidates not measured over every bucket (a
	// bucket outside their measured nkv is never extrapolated).
	Skipped []string `json:"skipped,omitempty"`
}

// A WorkloadCandidate is one kernel choice's expected step time.
type WorkloadCandidate struct {
	Name string `json:"name"`
	// Kind is "dispatch" (the recommendation), "variant" (its best
	// configuration at each nkv), "reference" or "landed".
	Kind string            `json:"kind"`
	Time workload.Estimate `json:"time_ns"`
	// VsLanded is Time over the landed kernel's (<1: faster), with the
	// buckets that regress beyond the report's 2% and their weight.
	VsLanded        workload.Estimate `json:"vs_landed"`
	RegressedWeight float64           `json:"regressed_weight"`
	Interpolated    bool              `json:"interpolated"`
	// Note says what the time rests on beyond measurements (the
	// dispatch's arms not measured at some nkv).
	Note string `json:"note,omitempty"`
}

// regressThreshold is the slowdown a bucket may show before the view
// calls it a regression: the default of `ktune gate`.
const regressThreshold = 0.02

// maxWorkloadVariants caps the variants the view lists besides the
// dispatch, the landed kernel and the references.
const maxWorkloadVariants = 4

func (rep *Report) workloadView(w *workload.Workload) *WorkloadView {
	v := &WorkloadView{Name: w.Name, Source: w.Source, Notes: w.Notes}
	for i := range rep.Ship {
		s := &rep.Ship[i]
		if s.Landed == "" {
			continue
		}
		var sub workload.Workload
		share := 0.0
		for _, b := range w.Buckets {
			if b.Batch == s.Dims.Batch {
				sub.Buckets = append(sub.Buckets, b)
				share += b.Weight
			}
		}
		if share == 0 {
			continue
		}
		for j := range sub.Buckets {
			sub.Buckets[j].Weight /= share
		}
		if ws, ok := rep.workloadShape(s, &sub); ok {
			ws.Share = share
			v.Shapes = append(v.Shapes, ws)
		}
	}
	return v
}

func (rep *Report) workloadShape(s *ShipShape, w *workload.Workload) (WorkloadShape, bool) {
	ws := WorkloadShape{Device: s.Device, Shape: s.Shape, Batch: s.Dims.Batch}
	var rows []Row
	for i := range rep.Rows {
		if r := &rep.Rows[i]; r.Device == s.Device && r.Label == s.Shape && !r.Fixture {
			rows = append(rows, *r)
		}
	}
	batch := s.Dims.Batch
	side := func(pick func(*Row) bool, fastest bool) workload.Side {
		c := workload.Curve{}
		best := map[int]*Row{}
		for i := range rows {
			r := &rows[i]
			if !comparable(r) || !pick(r) {
				continue
			}
			if b := best[r.NKV]; b == nil || (fastest && r.Probe(shipProbe).MedianNS < b.Probe(shipProbe).MedianNS) {
				best[r.NKV] = r
			}
		}
		for n, r := range best {
			c[n] = r.Probe(shipProbe).Samples
		}
		return workload.Side{batch: c}
	}
	landed := side(func(r *Row) bool { return r.Landed }, true)
	if len(landed[batch]) == 0 {
		return ws, false
	}
	type cand struct {
		name, kind string
		side       workload.Side
	}
	var cands []cand
	dispatchNote := ""
	for _, rc := range rep.Recommend {
		if rc.Device == s.Device && rc.Shape == s.Shape && rc.Error == "" {
			c := workload.Curve{}
			all := rep.rowsOf(s.Device, s.Dims)
			var unmeasured []int
			for _, cell := range rc.Cells {
				if r := rowAt(all, cell.Config, cell.NKV); r != nil && !cell.Unmeasured {
					c[cell.NKV] = r.Probe(shipProbe).Samples
				} else {
					unmeasured = append(unmeasured, cell.NKV)
				}
			}
			if len(unmeasured) > 0 {
				dispatchNote = fmt.Sprintf("its arm was not measured at nkv %s: there the time is interpolated from the neighbouring measured nkv, perhaps of another arm",
					strings.ReplaceAll(joinInts(unmeasured), ",", ", "))
			}
			cands = append(cands, cand{fmt.Sprintf("recommended dispatch (%d arms)", len(rc.Arms)), "dispatch", workload.Side{batch: c}})
		}
	}
	cands = append(cands, cand{"landed", "landed", landed})
	var variants, refs []string
	for i := range rows {
		r := &rows[i]
		list := &variants
		if r.Reference {
			list = &refs
		}
		if shippable(r) || (r.Reference && comparable(r)) {
			if !slices.Contains(*list, r.Variant) {
				*list = append(*list, r.Variant)
			}
		}
	}
	slices.Sort(variants)
	slices.Sort(refs)
	for _, name := range refs {
		cands = append(cands, cand{name + " (reference)", "reference", side(func(r *Row) bool { return r.Variant == name }, true)})
	}
	var vc []WorkloadCandidate
	for _, name := range variants {
		sd := side(func(r *Row) bool { return r.Variant == name && shippable(r) }, true)
		if c, ok := evalCandidate(w, name, "variant", sd, landed); ok {
			vc = append(vc, c)
		} else {
			ws.Skipped = append(ws.Skipped, name)
		}
	}
	slices.SortFunc(vc, func(a, b WorkloadCandidate) int { return cmp.Compare(a.Time.Center, b.Time.Center) })
	ws.Candidates = append(ws.Candidates, vc[:min(len(vc), maxWorkloadVariants)]...)
	for _, c := range cands {
		if wc, ok := evalCandidate(w, c.name, c.kind, c.side, landed); ok {
			if c.kind == "dispatch" {
				wc.Note = dispatchNote
			}
			ws.Candidates = append(ws.Candidates, wc)
		} else {
			ws.Skipped = append(ws.Skipped, c.name)
		}
	}
	slices.SortStableFunc(ws.Candidates, func(a, b WorkloadCandidate) int { return cmp.Compare(a.Time.Center, b.Time.Center) })
	return ws, len(ws.Candidates) > 0
}

// evalCandidate is one side's expected step time against landed; false
// when a bucket lies outside its measured nkv.
func evalCandidate(w *workload.Workload, name, kind string, side, landed workload.Side) (WorkloadCandidate, bool) {
	ev := workload.Evaluate(w, side, landed, workload.Options{Threshold: regressThreshold, Resamples: 1000})
	if len(ev.Refused) > 0 || len(ev.Buckets) == 0 {
		return WorkloadCandidate{}, false
	}
	c := WorkloadCandidate{Name: name, Kind: kind, Time: ev.Cand, VsLanded: ev.Ratio, RegressedWeight: ev.RegressedWeight}
	for _, b := range ev.Buckets {
		c.Interpolated = c.Interpolated || b.Interpolated
	}
	return c, true
}
