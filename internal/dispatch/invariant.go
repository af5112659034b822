package dispatch

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/table"
)

// The price of invariance: what it costs that a sequence's output bits do
// not depend on the batch, its position in it or the arm that served it.
//
// An Invariance classes configurations (the built-ins' claims,
// variants.InvarianceClass, or a passing invariance gate): ok when a
// configuration's bits do not depend on the batch or the position, and
// a class equal for configurations whose bits equal one another's. The
// invariant table keeps, per shape, the arms of one class, the class that
// costs least where the unconstrained table measured; the price rows set,
// per shape and measured nkv, the fastest invariant configuration (any
// class) and the invariant table's arm against the fastest overall.

// An Invariance classes a record's configuration (see above).
type Invariance func(r *results.Record) (class string, ok bool)

// A PriceRow is the price of invariance at one shape and measured nkv.
type PriceRow struct {
	Shape    results.Shape
	PageSize int
	NKV      int
	// Fastest is the unconstrained table's choice and FastestNS its
	// median; Invariant and InvariantNS the fastest invariant
	// configuration's (empty and 0: none measured here); TableNS the
	// invariant table's arm's (0: its class was not measured here).
	Fastest, Invariant, TableArm string
	FastestNS, InvariantNS       float64
	TableNS                      float64
}

// An InvariantTables is BuildInvariant's outcome.
type InvariantTables struct {
	// Free is the unconstrained table; Fixed the table whose arms are
	// invariant with one another (nil when no configuration is
	// invariant), with Class the class each of its shapes uses, by
	// shape label.
	Free, Fixed *Table
	Class       map[string]string
	Price       []PriceRow
}

// BuildInvariant builds the unconstrained table, the invariant one and
// the price rows from the same records (Build's rules for each).
func BuildInvariant(recs []results.Record, sources []Source, opt Options, inv Invariance) (*InvariantTables, error) {
	free, err := Build(recs, sources, opt)
	if err != nil {
		return nil, err
	}
	out := &InvariantTables{Free: free, Class: map[string]string{}}
	byClass := map[string][]results.Record{}
	var any []results.Record
	for _, r := range recs {
		if c, ok := inv(&r); ok {
			byClass[c] = append(byClass[c], r)
			any = append(any, r)
		}
	}
	fastestInv := map[tableKey]map[int]pickAt{}
	if len(any) > 0 {
		if t, err := Build(any, sources, opt); err == nil {
			fastestInv = picksOf(t)
		}
	}
	// Per shape, the class whose own table is cheapest over the nkv the
	// unconstrained table measured and it covers most of.
	type choice struct {
		class   string
		st      ShapeTable
		covered int
		cost    float64 // Σ median / the unconstrained median
		picks   map[int]pickAt
	}
	best := map[tableKey]*choice{}
	classes := make([]string, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	freePicks := picksOf(free)
	for _, c := range classes {
		t, err := Build(byClass[c], sources, opt)
		if err != nil {
			continue // no record of the class qualified
		}
		tp := picksOf(t)
		for _, st := range t.Shapes {
			k := st.key()
			ch := &choice{class: c, st: st, picks: tp[k]}
			for n, fp := range freePicks[k] {
				if p, ok := tp[k][n]; ok {
					ch.covered++
					ch.cost += p.median / fp.median
				}
			}
			if b := best[k]; b == nil || ch.covered > b.covered || (ch.covered == b.covered && ch.cost < b.cost) {
				best[k] = ch
			}
		}
	}
	if len(best) > 0 {
		out.Fixed = &Table{Probe: free.Probe, Alpha: free.Alpha, Device: free.Device, Sources: sources,
			Invariant: "the cheapest class per shape; tune --invariant"}
		for _, st := range free.Shapes {
			if b := best[st.key()]; b != nil {
				out.Fixed.Shapes = append(out.Fixed.Shapes, b.st)
				out.Class[shapeLabel(st.key())] = b.class
			} else {
				out.Fixed.Warnings = append(out.Fixed.Warnings, fmt.Sprintf("%s: no invariant configuration passed its gates; shape left out", shapeLabel(st.key())))
			}
		}
	}
	for _, st := range free.Shapes {
		k := st.key()
		nkvs := make([]int, 0, len(freePicks[k]))
		for n := range freePicks[k] {
			nkvs = append(nkvs, n)
		}
		slices.Sort(nkvs)
		for _, n := range nkvs {
			fp := freePicks[k][n]
			row := PriceRow{Shape: k.shape, PageSize: k.pageSize, NKV: n, Fastest: fp.label, FastestNS: fp.median}
			if p, ok := fastestInv[k][n]; ok {
				row.Invariant, row.InvariantNS = p.label, p.median
			}
			if b := best[k]; b != nil {
				if p, ok := b.picks[n]; ok {
					row.TableArm, row.TableNS = p.label, p.median
				}
			}
			out.Price = append(out.Price, row)
		}
	}
	return out, nil
}

// A pickAt is a table's choice at one measured nkv.
type pickAt struct {
	label  string
	median float64
}

// picksOf is every measured nkv's choice of a table, by shape.
func picksOf(t *Table) map[tableKey]map[int]pickAt {
	out := map[tableKey]map[int]pickAt{}
	for _, st := range t.Shapes {
		m := map[int]pickAt{}
		for _, r := range st.Ranges {
			for _, p := range r.Picks {
				m[p.NKV] = pickAt{configLabel(r), p.MedianNS}
			}
		}
		out[st.key()] = m
	}
	return out
}

// WritePrice prints the price rows: per shape and nkv, the fastest
// configuration, the fastest invariant one and the invariant table's arm,
// each with its median and the invariant ones' cost against the fastest;
// as Markdown when markdown is set.
func (it *InvariantTables) WritePrice(w io.Writer, markdown bool) error {
	tbl := table.Table{
		Header: []string{"shape", "nkv", "fastest", "µs", "fastest invariant", "µs", "cost", "invariant table's arm", "µs", "cost"},
		Right:  []bool{false, true, false, true, false, true, true, false, true, true},
	}
	us := func(ns float64) string {
		if ns == 0 {
			return "—"
		}
		return strconv.FormatFloat(ns/1e3, 'f', 1, 64)
	}
	cost := func(ns, ref float64) string {
		if ns == 0 || ref == 0 {
			return "—"
		}
		return fmt.Sprintf("%+.1f%%", 100*(ns/ref-1))
	}
	orNone := func(s string) string {
		if s == "" {
			return "none measured"
		}
		return s
	}
	for _, r := range it.Price {
		tbl.Add(shapeLabel(tableKey{r.Shape, r.PageSize}), strconv.Itoa(r.NKV), r.Fastest, us(r.FastestNS),
			orNone(r.Invariant), us(r.InvariantNS), cost(r.InvariantNS, r.FastestNS),
			orNone(r.TableArm), us(r.TableNS), cost(r.TableNS, r.FastestNS))
	}
	if err := tbl.Render(w, markdown); err != nil {
		return fmt.Errorf("rendering the price of invariance: %w", err)
	}
	if g, n := it.TableCost(); n > 0 {
		if markdown {
			fmt.Fprintln(w)
		}
		_, err := fmt.Fprintf(w, "invariant table against the unconstrained one: %+.1f%% (geometric mean over %d measured nkv it covers)\n", 100*(g-1), n)
		return err
	}
	return nil
}

// TableCost is the invariant table's time over the unconstrained one's,
// the geometric mean of the ratios at every measured nkv both cover, and
// how many that is.
func (it *InvariantTables) TableCost() (float64, int) {
	s, n := 0.0, 0
	for _, r := range it.Price {
		if r.TableNS > 0 && r.FastestNS > 0 {
			s += math.Log(r.TableNS / r.FastestNS)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return math.Exp(s / float64(n)), n
}
