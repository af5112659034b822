package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
)

// A Duplicate is a point (device, shape, configuration, nkv) that more
// than one record measured. Build keeps the newest record (by its time;
// of equal times, the first read) so that a re-run replaces what it
// re-measured; the others are left out of every table and plot.
type Duplicate struct {
	Device  string      `json:"device"`
	Shape   string      `json:"shape"`
	Config  string      `json:"config"`
	NKV     int         `json:"nkv"`
	Kept    DupRecord   `json:"kept"`
	Dropped []DupRecord `json:"dropped"`
	Why     string      `json:"why"`
}

// A DupRecord names one record of a duplicate point.
type DupRecord struct {
	Hash   string    `json:"hash"`
	Time   time.Time `json:"time"`
	Source string    `json:"source,omitempty"` // the results file, when known
	// MedianNS is the cold median (0 when the record has none), so that a
	// reader sees how far the measurements disagree.
	MedianNS float64 `json:"median_ns"`
}

func duplicates(recs []results.Record, sources []string, kept map[decision.PointKey]int, dups []int, labels map[string]string) []Duplicate {
	dr := func(i int) DupRecord {
		d := DupRecord{Hash: recs[i].Hash, Time: recs[i].Time}
		if len(sources) == len(recs) {
			d.Source = sources[i]
		}
		if m := recs[i].Probe(results.ProbeCold); m != nil && len(m.SamplesNS) > 0 {
			s := slices.Clone(m.SamplesNS)
			sort.Float64s(s)
			d.MedianNS = s[len(s)/2]
		}
		return d
	}
	// Every record of a point that has duplicates: the kept one and the
	// others (decision.Points names the later ones; the kept may be any).
	byKey := map[decision.PointKey][]int{}
	var order []decision.PointKey
	for _, i := range dups {
		k := decision.KeyFor(recs[i].Env.Device, &recs[i].Config)
		if byKey[k] == nil {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	// The first record of each such key, which dups does not list.
	firsts := map[decision.PointKey]int{}
	for i := range recs {
		k := decision.KeyFor(recs[i].Env.Device, &recs[i].Config)
		if _, seen := firsts[k]; !seen && byKey[k] != nil {
			firsts[k] = i
		}
	}
	var out []Duplicate
	for _, k := range order {
		keep, first := kept[k], firsts[k]
		r := &recs[keep]
		d := Duplicate{Device: r.Env.Device, Shape: labels[k.Shape], Config: ConfigLabel(&r.Config), NKV: r.Config.NKV, Kept: dr(keep)}
		sameTime := false
		for _, i := range append([]int{first}, byKey[k]...) {
			if i != keep {
				d.Dropped = append(d.Dropped, dr(i))
				sameTime = sameTime || recs[i].Time.Equal(r.Time)
			}
		}
		d.Why = "the newest record"
		if sameTime {
			d.Why = "of records with the same time, the first read"
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		if a.Shape != b.Shape {
			return a.Shape < b.Shape
		}
		if a.Config != b.Config {
			return a.Config < b.Config
		}
		return a.NKV < b.NKV
	})
	return out
}

// writeDuplicates writes the points measured more than once and which
// record each row rests on.
func (rep *Report) writeDuplicates(ew *errWriter) {
	if len(rep.Duplicates) == 0 {
		return
	}
	dropped := 0
	for _, d := range rep.Duplicates {
		dropped += len(d.Dropped)
	}
	ew.printf("\n## Duplicate points\n\n%d point(s) were measured by more than one record; %d record(s) left out. Every table and plot uses one record per point: "+
		"the newest (its time), of equal times the first read; a re-run replaces what it re-measured. cold µs is each record's cold median.\n\n",
		len(rep.Duplicates), dropped)
	g := &grid{}
	for _, h := range []string{"shape", "configuration", "nkv", "kept", "cold µs", "left out", "cold µs ", "why"} {
		g.Col(h, h == "nkv" || strings.HasPrefix(h, "cold"))
	}
	name := func(d DupRecord) string {
		s := d.Hash
		if len(s) > 12 {
			s = s[:12]
		}
		s += " " + d.Time.UTC().Format("2006-01-02 15:04")
		if d.Source != "" {
			s += " " + d.Source
		}
		return s
	}
	us := func(ns float64) string {
		if ns <= 0 {
			return "-"
		}
		return fmtUS(ns)
	}
	for _, d := range rep.Duplicates {
		shape := d.Shape
		if rep.Devices > 1 {
			shape += " on " + d.Device
		}
		for i, x := range d.Dropped {
			row := []string{shape, d.Config, fmt.Sprint(d.NKV), name(d.Kept), us(d.Kept.MedianNS), name(x), us(x.MedianNS), d.Why}
			if i > 0 {
				row[0], row[1], row[2], row[3], row[4] = "", "", "", "", ""
			}
			g.Rows = append(g.Rows, escape(row, true))
		}
	}
	if ew.err == nil {
		ew.err = g.Render(ew.w, true)
	}
}
