package gate

import (
	"context"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// Every length the kernel is timed at.
//
// The gate lengths are the spec's and the split boundaries; a kernel whose
// error grows with the chunk length passes them and is then timed, and
// shipped, at 131072. Drawing that many rows per sequence is out of reach
// (17 GB at batch 16), so the uniform set's rows are tiled on the device
// up to the capacity, row r holding row r mod Rows (oracle.Inputs.Tiled),
// and the kernel is judged against the oracle at the capacity, in its
// group's gates, and at the longest length each point is timed at, before
// its probes (TimedLengths): every length that reaches the device is one
// the oracle has passed. All of a call's lengths come from one pass of the
// oracle.

// long judges the kernel at the capacity and at the point's own timed
// lengths, where they pass the gate lengths.
var long = Gate{
	Name:     "long",
	Kinds:    []results.GateKind{results.GateTolerance},
	Settings: []string{"GateNKV", "Tol", "Waivers"},
	Run: func(ctx context.Context, s Session, log *Log) error {
		c := &s.Point().Config
		capacity := make([]int, c.Shape.Batch)
		for i := range capacity {
			capacity[i] = c.Shape.Capacity
		}
		return longAt(ctx, s, [][]int{Lengths(c.Shape.Capacity, c.Shape), capacity, c.TimedLengths()}, log)
	},
}

// TimedLengths judges a point whose group's gates ran on an earlier point
// at its own timed lengths, when they pass the gate lengths.
func TimedLengths(ctx context.Context, s Session, log *Log) error {
	return longAt(ctx, s, [][]int{s.Point().Config.TimedLengths()}, log)
}

// longAt judges the point's kernel at each of launches (per-sequence
// lengths) longer than the gate lengths, on the uniform set tiled to the
// capacity.
func longAt(ctx context.Context, s Session, launches [][]int, log *Log) error {
	p := s.Point()
	c, shape := &p.Config, p.Config.Shape
	rows := slices.Max(NKVs(p.GateNKV, shape.Capacity))
	var want [][]int
	for _, l := range launches {
		if slices.Max(l) > rows && !slices.ContainsFunc(want, func(w []int) bool { return slices.Equal(w, l) }) {
			want = append(want, l)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// In a paged pool the set is a whole number of pages (as far as the
	// capacity allows), so that every tiled page repeats one of the
	// set's and none spans the cycle's end.
	if ps := s.PageSize(); ps > 0 {
		rows = min(shape.Capacity, (rows+ps-1)/ps*ps)
	}
	in, err := s.UploadSet(oracle.SetUniform, rows, Lengths(rows, shape))
	if err != nil {
		return err
	}
	tiled, err := s.UploadTiled(in)
	if err != nil {
		return err
	}
	refs, err := s.References(tiled, want)
	if err != nil {
		return err
	}
	bounds, waiver := setBounds(p, s.Bounds(), oracle.SetUniform)
	for i, lengths := range want {
		nkv := slices.Max(lengths)
		o, err := s.Launch(s.Kernel(), nkv, lengths)
		if err != nil {
			return fmt.Errorf("gate run at nkv %d (uniform inputs tiled to the capacity): %w", nkv, err)
		}
		m, err := oracle.Compare(floats(o.Out), refs[i].Out, bounds)
		if err != nil {
			return err
		}
		tag := func(g results.Gate) results.Gate {
			g.Inputs, g.Waiver = string(oracle.SetUniform), waiver
			why := fmt.Sprintf("rows past %d tiled to the capacity", in.Rows)
			if g.Detail == "" {
				g.Detail = why
			} else {
				g.Detail += " (" + why + ")"
			}
			return g
		}
		log.Add(tag(Tolerance(nkv, p.Seed, m, bounds)))
		// A declared lse is judged here too: a log-sum-exp that drifts
		// with the length is as wrong at 131072 as out is.
		if err := lse(p, nkv, o.LSE, refs[i].LSE, log, tag); err != nil {
			return err
		}
		s.Recycle(o.Partial)
		s.Logf("%s: gate at nkv %d (uniform, tiled): max_abs %.2g nmse %.2g", c.Variant, nkv, m.MaxAbs, m.NMSE)
	}
	return nil
}
