package gate

import (
	"fmt"
	"math"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// Poison is the NaN bit pattern the probe fills partial and out with
// before every launch the gates read: a quiet NaN no kernel computes by
// accident, so any element that still holds it afterwards was never
// written (Written).
const Poison uint32 = 0x7FC0DEAD

// Written checks that the kernels overwrote every element the ABI says
// they write: all of out, p[0], p[1], p[4..4+head_dim) of every partial
// slot (idle splits included: they must write −inf, 0, 0), and every row
// of a declared lse.
func Written(nkv int, seed uint64, o Outputs, slots, headDim int) results.Gate {
	g := results.Gate{Kind: results.GateWritten, NKV: nkv, Seed: seed, FirstDiff: -1}
	np, fp := unwritten(o.Partial, partialWords(slots, headDim))
	no, fo := unwritten(o.Out, outWords(len(o.Out)/4))
	nl, fl := unwritten(o.LSE, outWords(len(o.LSE)/4))
	g.Pass = np == 0 && no == 0 && nl == 0
	g.DiffBytes = 4 * (np + no + nl)
	// The partial buffer is upstream of out: its first hole is the cause.
	switch {
	case np > 0:
		g.Buffer, g.FirstDiff = "partial", fp
	case no > 0:
		g.Buffer, g.FirstDiff = "out", fo
	case nl > 0:
		g.Buffer, g.FirstDiff = "lse", fl
	}
	if !g.Pass {
		g.Detail = fmt.Sprintf("%d partial and %d out floats still hold the poison", np, no)
		if o.LSE != nil {
			g.Detail = fmt.Sprintf("%d partial, %d out and %d lse floats still hold the poison", np, no, nl)
		}
		if np > 0 {
			pstr := abi.PartialStride(headDim)
			word := fp / 4
			g.Detail += fmt.Sprintf(" (first: slot %d word %d)", word/pstr, word%pstr)
		}
	}
	return g
}

// Tolerance judges the oracle metrics.
func Tolerance(nkv int, seed uint64, m oracle.Metrics, b oracle.Bounds) results.Gate {
	g := results.Gate{
		Kind: results.GateTolerance, NKV: nkv, Seed: seed, Pass: m.Pass(b),
		MaxAbs: m.MaxAbs, MaxRel: m.MaxRel, NMSE: m.NMSE, NaNs: m.NaNs,
	}
	if g.Pass {
		return g
	}
	var why []string
	if m.NaNs > 0 {
		why = append(why, fmt.Sprintf("%d NaN/Inf outputs", m.NaNs))
	}
	if m.Outside > 0 {
		why = append(why, fmt.Sprintf("%d outputs outside |err| <= %.3g + %.3g*|ref| (worst %.3gx the bound; max_abs %.3g, max_rel %.3g)",
			m.Outside, b.MaxAbs, b.MaxRel, m.Worst, m.MaxAbs, m.MaxRel))
	}
	if m.NMSE > b.NMSE {
		why = append(why, fmt.Sprintf("nmse %.3g > %.3g", m.NMSE, b.NMSE))
	}
	g.Detail = strings.Join(why, ", ")
	return g
}

// diffGate compares two buffers byte for byte.
func diffGate(kind results.GateKind, nkv int, seed uint64, buffer string, a, b []byte) results.Gate {
	n, first := diffBytes(a, b)
	g := results.Gate{Kind: kind, NKV: nkv, Seed: seed, Pass: n == 0, DiffBytes: n, FirstDiff: first, Buffer: buffer}
	if n > 0 {
		g.Detail = fmt.Sprintf("%d of %d %s bytes differ, first at byte %d", n, max(len(a), len(b)), buffer, first)
	}
	return g
}

// Same compares two launches' outputs byte for byte, buffer by buffer in
// the order of named, and reports the first that differs; why prefixes
// the detail of a difference. A pass is recorded as out's, as it was
// before lse was compared.
func Same(kind results.GateKind, nkv int, seed uint64, a, b Outputs, why string) results.Gate {
	var pass results.Gate
	for _, x := range a.named(b) {
		g := diffGate(kind, nkv, seed, x.name, x.a, x.b)
		if !g.Pass {
			g.Detail = why + ": " + g.Detail
			return g
		}
		if x.name == "out" {
			pass = g
		}
	}
	return pass
}

// A namedPair is one buffer of two launches' outputs.
type namedPair struct {
	name string
	a, b []byte
}

// named pairs o's buffers with b's: partial (upstream of out, so its
// difference is the cause), out, then lse when o has it.
func (o Outputs) named(b Outputs) []namedPair {
	out := []namedPair{{"partial", o.Partial, b.Partial}, {"out", o.Out, b.Out}}
	if o.LSE != nil || b.LSE != nil {
		out = append(out, namedPair{"lse", o.LSE, b.LSE})
	}
	return out
}

// lse judges the log-sum-exp a kernel declaring lse wrote (raw, f32
// [batch][q_len][heads] from the start of the lse buffer) against the
// oracle's, and adds the verdict, tagged, to log. The buffer was
// poisoned before the launch, so a row the kernel did not write is a NaN
// here.
func lse(p *plan.Point, nkv int, raw []byte, ref []float64, log *Log, tag func(results.Gate) results.Gate) error {
	if p.Config.Shape.Attention.LSE == "" {
		return nil
	}
	g, err := lseTolerance(p, nkv, raw, ref)
	if err != nil {
		return err
	}
	log.Add(tag(g))
	return nil
}

// lseTolerance is the tolerance verdict on lse, with the spec's bounds as
// they are: a log is not a weighted V, so the set's V scale does not
// apply.
func lseTolerance(p *plan.Point, nkv int, raw []byte, ref []float64) (results.Gate, error) {
	t := p.Tol
	b := oracle.Bounds{MaxAbs: t.MaxAbs, MaxRel: t.MaxRel, NMSE: t.NMSE}
	m, err := oracle.Compare(floats(raw), ref, b)
	if err != nil {
		return results.Gate{}, err
	}
	g := Tolerance(nkv, p.Seed, m, b)
	g.Buffer = "lse"
	if !g.Pass {
		if hint := lseBaseHint(floats(raw), ref, p.Config.Shape.Attention.LSE); hint != "" {
			g.Detail += "; " + hint
		}
	}
	return g, nil
}

// lseBaseHint names the likeliest cause of an lse that fails by a
// constant factor: the kernel writes its log-sum-exp in the other base
// than the spec declares (FlashInfer's is base 2: m + log2(d) with the
// scores pre-scaled by log2(e)). Every output whose reference is not
// near zero must be off by the same factor, log2(e) or ln(2), within
// 0.1%; "" otherwise. It only explains a failure, never passes one.
func lseBaseHint(got []float32, ref []float64, declared abi.LSEBase) string {
	factors := []struct {
		f    float64
		base abi.LSEBase
	}{{math.Log2E, abi.LSELog2}, {math.Ln2, abi.LSENatural}}
	for _, c := range factors {
		if c.base == declared {
			continue
		}
		n := 0
		for i, r := range ref {
			if i >= len(got) || math.Abs(r) < 1e-3 {
				continue
			}
			if q := float64(got[i]) / r; math.IsNaN(q) || math.Abs(q/c.f-1) > 1e-3 {
				n = -1
				break
			}
			n++
		}
		if n > 0 {
			return fmt.Sprintf("every lse output is %.4f x the reference: the kernel writes lse in base %s, the spec declares lse: %s", c.f, baseName(c.base), declared)
		}
	}
	return ""
}

func baseName(b abi.LSEBase) string {
	if b == abi.LSELog2 {
		return "2"
	}
	return "e"
}
