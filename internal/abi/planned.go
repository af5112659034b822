package abi

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
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
// the entry's index within the sequence (expand's Value only), the
// sequence's length and the step's longest (a planner that sizes its
// work from the batch, as FlashInfer's chunk size from the longest
// sequence's pages).
const (
	PlanSeq    = "i"
	PlanEntry  = "j"
	PlanNKV    = "nkv"
	PlanMaxNKV = "max_nkv"
)

// A PlannedElem is the C type of a planned array's entries, as the
// kernel's pointer reads them: int32 unless the engine's field says
// otherwise (FlashInfer's block_valid_mask is a bool*, one byte an entry).
type PlannedElem string

// The entry types.
const (
	PlannedI32  PlannedElem = "i32" // the default
	PlannedI64  PlannedElem = "i64"
	PlannedU8   PlannedElem = "u8"
	PlannedBool PlannedElem = "bool" // one byte, 0 or 1
)

// PlannedElems lists the entry types, for messages.
var PlannedElems = []PlannedElem{PlannedI32, PlannedI64, PlannedU8, PlannedBool}

// PlannedElemNames lists the entry types, for messages.
func PlannedElemNames() string {
	names := make([]string, len(PlannedElems))
	for i, e := range PlannedElems {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// ParsePlannedElem reads an entry type; "" is the default, i32.
func ParsePlannedElem(s string) (PlannedElem, bool) {
	if s == "" {
		return PlannedI32, true
	}
	e := PlannedElem(s)
	return e, slices.Contains(PlannedElems, e)
}

// Bytes is the size of one entry.
func (e PlannedElem) Bytes() int {
	switch e {
	case PlannedI64:
		return 8
	case PlannedU8, PlannedBool:
		return 1
	}
	return 4
}

// bounds are the values an entry can hold.
func (e PlannedElem) bounds() (lo, hi int64) {
	switch e {
	case PlannedI64:
		return math.MinInt64, math.MaxInt64
	case PlannedU8:
		return 0, math.MaxUint8
	case PlannedBool:
		return 0, 1
	}
	return math.MinInt32, math.MaxInt32
}

// put writes v as one entry at b.
func (e PlannedElem) put(b []byte, v int64) {
	switch e.Bytes() {
	case 8:
		binary.LittleEndian.PutUint64(b, uint64(v))
	case 1:
		b[0] = byte(v)
	default:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	}
}

// A Planned is one host-planned array as a spec declares it: a
// generator over the sequences' lengths, rewritten with them at every
// length the gates launch at and between graph replays. Count and Value
// are integer expressions; Length, the entries the array holds, is one
// over the shape and the defines (never a length: the buffer's size is
// fixed for the step), empty for the generator's own (batch for per_seq,
// batch + 1 for prefix); entries past the generated ones hold Pad. Elem
// is the entries' type ("" for i32).
type Planned struct {
	Name   string
	Kind   PlannedKind
	Count  string
	Value  string
	Length string
	Pad    int64
	Elem   PlannedElem
}

// EntryType is the entries' type (i32 when none is declared).
func (p *Planned) EntryType() PlannedElem {
	e, _ := ParsePlannedElem(string(p.Elem))
	return e
}

// EntryBounds are the values an entry can hold.
func (p *Planned) EntryBounds() (lo, hi int64) { return p.EntryType().bounds() }

// String is the array's canonical text, for the point's hash. An int32
// array keeps the text it had before entry types existed.
func (p *Planned) String() string {
	s := fmt.Sprintf("planned %s %s(%s; %s) length %s pad %d", p.Name, p.Kind, p.Count, p.Value, p.Length, p.Pad)
	if e := p.EntryType(); e != PlannedI32 {
		s += " type " + string(e)
	}
	return s
}

// Buf is the array at env: its name, entries and entry size.
func (p *Planned) Buf(env expr.Env) (PlannedBuf, error) {
	n, err := p.Entries(env)
	return PlannedBuf{Name: p.Name, Entries: n, Size: p.EntryType().Bytes()}, err
}

// A PlannedBuf is a planned array at one point: its name, its entries and
// the bytes of one (0, in a plan written before entry types, is 4).
type PlannedBuf struct {
	Name    string
	Entries int
	Size    int `json:",omitempty"`
}

// EntryBytes is the size of one entry.
func (b PlannedBuf) EntryBytes() int64 {
	if b.Size == 0 {
		return 4
	}
	return int64(b.Size)
}

// Bytes is the array's size.
func (b PlannedBuf) Bytes() int64 { return b.EntryBytes() * int64(b.Entries) }

// PlannedText is the canonical text of a point's planned arrays' sizes,
// for a layout that must compare with ==: each array's name and entries,
// then its entry size where that is not 4.
func PlannedText(bufs []PlannedBuf) string {
	parts := make([]string, len(bufs))
	for i, b := range bufs {
		parts[i] = fmt.Sprintf("%s %d", b.Name, b.Entries)
		if b.EntryBytes() != 4 {
			parts[i] += fmt.Sprintf(" %d", b.EntryBytes())
		}
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
		b.Size = 4
		fmt.Sscanf(p, "%s %d %d", &b.Name, &b.Entries, &b.Size)
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
		off = Align16(off + b.Bytes())
	}
	return out
}

func (d Dims) plannedEnd() int64 {
	spans := d.PlannedSpans()
	if len(spans) == 0 {
		return 0
	}
	last := spans[len(spans)-1]
	return last.Offset + last.Bytes()
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
		elem, size := decls[i].EntryType(), sp.EntryBytes()
		if int64(elem.Bytes()) != size {
			return nil, fmt.Errorf("planned %s: %s entries declared, %d-byte entries laid out", sp.Name, elem, size)
		}
		for j, v := range vals {
			elem.put(out[sp.Offset+size*int64(j):], v)
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
// the array holds, or a value its entry type cannot hold, is an error:
// the kernel would read an array the planner could not have written.
func (p *Planned) Generate(env expr.Env, nkv []int) ([]int64, error) {
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
	elem := p.EntryType()
	lo, hi := elem.bounds()
	if p.Pad < lo || p.Pad > hi {
		return nil, fmt.Errorf("planned %s: pad %d does not fit a %s entry", p.Name, p.Pad, elem)
	}
	var out []int64
	push := func(v int64) error {
		if v < lo || v > hi {
			return fmt.Errorf("planned %s: entry %d = %d does not fit a %s entry", p.Name, len(out), v, elem)
		}
		if len(out) == n {
			return fmt.Errorf("planned %s: the generator yields more than its %d entries at lengths %v", p.Name, n, nkv)
		}
		out = append(out, v)
		return nil
	}
	sum, longest := int64(0), 0
	for _, l := range nkv {
		longest = max(longest, l)
	}
	e[PlanMaxNKV] = int64(longest)
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

// A Pointee is what a pointer argument holds, for the layout check of a
// struct member that points at it: the size of one element where it is
// the same at every point of a variant (0 where it is not known: K and V,
// whose type is the shape's, scratch, null, the workspace), and whether a
// member may read it in vectors of elements (half2 over f16 data) or must
// read it element by element (index arrays: an int64 or bool pointer over
// int32 entries is a different array, not a vector of them).
type Pointee struct {
	Bytes   int
	Vectors bool
}

// Holds reports whether a pointer whose pointee is n bytes reads the
// argument's elements: n equal to the element's size, or a whole number of
// elements where vectors are allowed and the pointee is no single
// floating-point number (scalar: a float or half pointer reads one number
// an element, never several packed). An unknown size (0 on either side)
// is not judged.
func (p Pointee) Holds(n int, scalar bool) bool {
	switch {
	case p.Bytes == 0 || n == 0 || n == p.Bytes:
		return true
	case p.Vectors && !scalar:
		return n%p.Bytes == 0
	}
	return false
}

// PointeeOf is what a pointer argument holds: a planned array's entries
// by their type, the vocabulary's int32 and f32 arrays, q and out in the
// io's types and K and V in kvBytes-byte elements (0: not known; all four
// readable as vectors).
func PointeeOf(a Arg, io IO, planned []Planned, kvBytes int) Pointee {
	switch {
	case !a.IsBuffer() || a.Struct != nil || a.Name == "" || a.IsScratch():
		return Pointee{}
	case a.IsPlanned():
		for i := range planned {
			if planned[i].Name == a.Name {
				return Pointee{Bytes: planned[i].EntryType().Bytes()}
			}
		}
		return Pointee{}
	}
	switch a.Name {
	case "q":
		return Pointee{Bytes: io.OrABI().Q.Bytes(), Vectors: true}
	case "out":
		return Pointee{Bytes: io.OrABI().Out.Bytes(), Vectors: true}
	case "k", "v":
		return Pointee{Bytes: kvBytes, Vectors: true}
	}
	if b := BufferNamed(a.Name); b != nil {
		return Pointee{Bytes: b.Elem}
	}
	return Pointee{}
}
