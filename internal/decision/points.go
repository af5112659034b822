package decision

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// A ConfigKey identifies one compiled configuration of a variant on one
// device and shape, across context lengths: the row identity of the
// report and of the landing gate.
type ConfigKey struct {
	Device  string
	Shape   string // abi.Shape.Identity
	Variant string
	Defines string // every define, sorted by name (AllDefines)
}

// A PointKey is a configuration at one context length. It deliberately
// does not use Record.Hash: the hash covers the spec and the device
// architecture, and comparisons must match the same point across both.
type PointKey struct {
	ConfigKey
	NKV int
}

// KeyFor is the key of configuration c measured on device.
func KeyFor(device string, c *results.Config) PointKey {
	return PointKey{ConfigKey{device, c.Shape.Identity(), c.Variant, AllDefines(c)}, c.NKV}
}

// AllDefines renders every define of c, sorted by name ("NR=4,SPLITS=32").
func AllDefines(c *results.Config) string { return c.Defines.Sorted().Join(",") }

// OtherDefines renders the defines of c other than SPLITS and the ones
// derived from the shape, sorted by name ("NR=4,VEC=8"), or "" if none.
func OtherDefines(c *results.Config) string {
	// SPLITS has its own column; the derived defines say nothing the
	// shape column does not already say.
	return c.Defines.Sorted().Own().Without(abi.DefineSplits).Join(",")
}

// ConfigLabel renders a configuration as "d2 SPLITS=32 NR=4".
func ConfigLabel(c *results.Config) string {
	s := fmt.Sprintf("%s SPLITS=%d", c.Variant, c.Splits)
	if o := OtherDefines(c); o != "" {
		s += " " + strings.ReplaceAll(o, ",", " ")
	}
	return s
}

// A Point is the record that counts for one point: the newest of those
// with its key.
type Point struct {
	Key   PointKey
	Label string // the shape's unique label (ShapeLabels)
	Rec   *results.Record
}

// Points returns the point of every key of recs, in table order, and the
// indexes of the records that met a key already seen (duplicates, in
// input order): of those the newest counts, the first on equal times.
func Points(recs []results.Record) (pts []Point, dups []int) {
	labels := ShapeLabels(recs)
	latest := map[PointKey]int{}
	for i := range recs {
		r := &recs[i]
		k := KeyFor(r.Env.Device, &r.Config)
		if j, dup := latest[k]; dup {
			dups = append(dups, i)
			if !r.Time.After(recs[j].Time) {
				continue
			}
		}
		latest[k] = i
	}
	for k, i := range latest {
		pts = append(pts, Point{Key: k, Label: labels[k.Shape], Rec: &recs[i]})
	}
	sortPoints(pts)
	return pts, dups
}

// sortPoints puts points in table order: by device and shape, the landed
// configuration first within a shape, references after the kernels they
// are compared with, then by variant, SPLITS, the other defines and nkv.
func sortPoints(pts []Point) {
	type key struct {
		ref    bool
		others string
	}
	keys := make(map[*results.Record]key, len(pts))
	for i := range pts {
		r := pts[i].Rec
		keys[r] = key{results.IsReference(r), OtherDefines(&r.Config)}
	}
	sort.Slice(pts, func(i, j int) bool {
		a, b := &pts[i], &pts[j]
		ac, bc := &a.Rec.Config, &b.Rec.Config
		ak, bk := keys[a.Rec], keys[b.Rec]
		switch {
		case a.Key.Device != b.Key.Device:
			return a.Key.Device < b.Key.Device
		case a.Label != b.Label:
			return a.Label < b.Label
		case a.Key.Shape != b.Key.Shape:
			return a.Key.Shape < b.Key.Shape
		case a.Rec.Landed != b.Rec.Landed:
			return a.Rec.Landed
		case ak.ref != bk.ref:
			return bk.ref
		case ac.Variant != bc.Variant:
			return ac.Variant < bc.Variant
		case ac.Splits != bc.Splits:
			return ac.Splits < bc.Splits
		case ak.others != bk.others:
			return ak.others < bk.others
		}
		return ac.NKV < bc.NKV
	})
}
