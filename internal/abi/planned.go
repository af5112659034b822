package abi

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/ktune/ktune/internal/expr"
)

// A PlannedKind is how a host-planned array is generated from the
// sequences' lengths, as an engine's planner fills its index arrays on the
// host before each step (FlashInfer's request_indices, kv_tile_indices,
// o_indptr).
type PlannedKind string

// The generators.
const (
	// PlanPerSeq: one entry per sequence, Count at that sequence.
	PlanPerSeq PlannedKind = "per_seq"
	// PlanPrefix: batch + 1 entries, the exclusive prefix sums of Count
	// over the sequences (entry i is the sum over the sequences before i).
	PlanPrefix PlannedKind = "prefix"
	// PlanExpand: for each sequence i in order, Count(i) entries, entry j
	// holding Value(i, j): the flattening of a ragged per-sequence list.
	PlanExpand PlannedKind = "expand"
)

// PlannedKinds lists the generators, for messages.
var PlannedKinds = []PlannedKind{PlanPerSeq, PlanPrefix, PlanExpand}

// The symbols a generator's expressions read besides the geometry
// symbols, the integer scalars and the defines: the sequence's index,
// the entry's index within the sequence (expand's Value only) and the
// sequence's length.
const (
	PlanSeq   = "i"
	PlanEntry = "j"
	PlanNKV   = "nkv"
)

// A Planned is one host-planned int32 array as a spec declares it: a
// generator over the sequences' lengths, rewritten with them at every
// length the gates launch at and between graph replays. Count and Value
// are integer expressions; Length, the entries the array holds, is one
// over the shape and the defines (never a length: the buffer's size is
// fixed for the step), empty for the generator's own (batch for per_seq,
// batch + 1 for prefix); entries past the generated ones hold Pad.
type Planned struct {
	Name   string
	Kind   PlannedKind
	Count  string
	Value  string
	Length string
	Pad    int32
}

// String is the array's canonical text, for the point's hash.
func (p *Planned) String() string {
	return fmt.Sprintf("planned %s %s(%s; %s) length %s pad %d", p.Name, p.Kind, p.Count, p.Value, p.Length, p.Pad)
}

// A PlannedBuf is a planned array at one point: its name and its entries.
type PlannedBuf struct {
	Name    string
	Entries int
}

// PlannedText is the canonical text of a point's planned arrays' sizes,
// for a layout that must compare with ==.
func PlannedText(bufs []PlannedBuf) string {
	parts := make([]string, len(bufs))
	for i, b := range bufs {
		parts[i] = fmt.Sprintf("%s %d", b.Name, b.Entries)
	}
	return strings.Join(parts, "; ")
}

// ParsePlannedText reads PlannedText back.
func ParsePlannedText(s string) []PlannedBuf {
	if s == "" {
		return nil
	}
	var out []PlannedBuf
	for _, p := range strings.Split(s, "; ") {
		var b PlannedBuf
		fmt.Sscanf(p, "%s %d", &b.Name, &b.Entries)
		out = append(out, b)
	}
	return out
}

// A PlannedSpan is where one planned array lies in its allocation.
type PlannedSpan struct {
	PlannedBuf
	Offset int64
}

// PlannedSpans lays the planned arrays out one after the other, each
// 16-byte aligned.
func (d Dims) PlannedSpans() []PlannedSpan {
	var out []PlannedSpan
	off := int64(0)
	for _, b := range d.Planned {
		out = append(out, PlannedSpan{b, off})
		off = Align16(off + 4*int64(b.Entries))
	}
	return out
}

func (d Dims) plannedEnd() int64 {
	spans := d.PlannedSpans()
	if len(spans) == 0 {
		return 0
	}
	last := spans[len(spans)-1]
	return last.Offset + 4*int64(last.Entries)
}

// PlannedBytes generates every planned array at the lengths into one
// image of the allocation (PlannedSpans): one copy writes them all. env
// is the point's (Dims.Env with its defines); decls are the arrays'
// declarations, in the order of d.Planned.
func PlannedBytes(d Dims, decls []Planned, env expr.Env, lengths []int) ([]byte, error) {
	spans := d.PlannedSpans()
	if len(decls) != len(spans) {
		return nil, fmt.Errorf("%d planned arrays declared, %d laid out", len(decls), len(spans))
	}
	out := make([]byte, d.plannedEnd())
	for i, sp := range spans {
		vals, err := decls[i].Generate(env, lengths)
		if err != nil {
			return nil, err
		}
		if len(vals) != sp.Entries {
			return nil, fmt.Errorf("planned %s: %d entries generated, %d laid out", sp.Name, len(vals), sp.Entries)
		}
		for j, v := range vals {
			binary.LittleEndian.PutUint32(out[sp.Offset+4*int64(j):], uint32(v))
		}
	}
	return out, nil
}

// PlannedArg is the argument that passes a host-planned array.
func PlannedArg(name string) Arg { return Arg{Type: ArgPtr, Name: name, Value: "planned"} }

// IsPlanned reports whether the argument passes a host-planned array.
func (a Arg) IsPlanned() bool { return a.Type == ArgPtr && a.Value == "planned" }

// Entries is the number of entries the array holds at env (the shape's
// symbols and the defines).
func (p *Planned) Entries(env expr.Env) (int, error) {
	switch {
	case p.Length != "":
		n, err := evalIn(p.Length, env)
		if err != nil {
			return 0, fmt.Errorf("planned %s length: %w", p.Name, err)
		}
		if n < 1 || n > 1<<28 {
			return 0, fmt.Errorf("planned %s: length %d is outside 1..2^28", p.Name, n)
		}
		return int(n), nil
	case p.Kind == PlanPrefix:
		return int(env["batch"]) + 1, nil
	case p.Kind == PlanPerSeq:
		return int(env["batch"]), nil
	}
	return 0, fmt.Errorf("planned %s: an expand array needs its length", p.Name)
}

// Generate computes the array at the sequences' lengths nkv (one per
// sequence), padded to Entries. A generator that yields more entries than
// the array holds, or a value outside int32, is an error: the kernel
// would read an array the planner could not have written.
func (p *Planned) Generate(env expr.Env, nkv []int) ([]int32, error) {
	n, err := p.Entries(env)
	if err != nil {
		return nil, err
	}
	count, err := expr.Parse(p.Count)
	if err != nil {
		return nil, fmt.Errorf("planned %s: %w", p.Name, err)
	}
	var value *expr.Expr
	if p.Kind == PlanExpand {
		if value, err = expr.Parse(p.Value); err != nil {
			return nil, fmt.Errorf("planned %s value: %w", p.Name, err)
		}
	}
	e := expr.Env{}
	for k, v := range env {
		e[k] = v
	}
	var out []int32
	push := func(v int64) error {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return fmt.Errorf("planned %s: entry %d = %d does not fit an int32", p.Name, len(out), v)
		}
		if len(out) == n {
			return fmt.Errorf("planned %s: the generator yields more than its %d entries at lengths %v", p.Name, n, nkv)
		}
		out = append(out, int32(v))
		return nil
	}
	sum := int64(0)
	for i, l := range nkv {
		e[PlanSeq], e[PlanNKV] = int64(i), int64(l)
		c, err := count.Eval(e)
		if err != nil {
			return nil, fmt.Errorf("planned %s at sequence %d (nkv %d): %w", p.Name, i, l, err)
		}
		switch p.Kind {
		case PlanPerSeq:
			err = push(c)
		case PlanPrefix:
			err = push(sum)
			sum += c
		case PlanExpand:
			if c < 0 {
				return nil, fmt.Errorf("planned %s: sequence %d (nkv %d) has %d entries", p.Name, i, l, c)
			}
			for j := range c {
				e[PlanEntry] = j
				v, verr := value.Eval(e)
				if verr != nil {
					return nil, fmt.Errorf("planned %s value at sequence %d, entry %d: %w", p.Name, i, j, verr)
				}
				if err = push(v); err != nil {
					break
				}
			}
			delete(e, PlanEntry)
		}
		if err != nil {
			return nil, err
		}
	}
	if p.Kind == PlanPrefix {
		if err := push(sum); err != nil {
			return nil, err
		}
	}
	for len(out) < n {
		out = append(out, p.Pad)
	}
	return out, nil
}

func evalIn(src string, env expr.Env) (int64, error) {
	x, err := expr.Parse(src)
	if err != nil {
		return 0, err
	}
	return x.Eval(env)
}

// ParsePlannedKind parses a generator's key.
func ParsePlannedKind(s string) (PlannedKind, bool) {
	for _, k := range PlannedKinds {
		if string(k) == s {
			return k, true
		}
	}
	return "", false
}

// PlannedKindNames lists the generators' keys, for messages.
func PlannedKindNames() string {
	s := make([]string, len(PlannedKinds))
	for i, k := range PlannedKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
