package probe

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// writtenGate checks that the kernels overwrote every element the ABI
// says they write: all of out, p[0], p[1], p[4..4+head_dim) of every
// partial slot (idle splits included: they must write −inf, 0, 0), and
// every row of a declared lse.
func writtenGate(nkv int, seed uint64, o outputs, slots, headDim int) results.Gate {
	g := results.Gate{Kind: results.GateWritten, NKV: nkv, Seed: seed, FirstDiff: -1}
	np, fp := unwritten(o.partial, partialWords(slots, headDim))
	no, fo := unwritten(o.out, outWords(len(o.out)/4))
	nl, fl := unwritten(o.lse, outWords(len(o.lse)/4))
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
		if o.lse != nil {
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

// toleranceGate judges the oracle metrics.
func toleranceGate(nkv int, seed uint64, m oracle.Metrics, b oracle.Bounds) results.Gate {
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
