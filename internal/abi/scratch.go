package abi

import (
	"strconv"
	"strings"
)

// A ScratchFill is what a named scratch buffer holds before the first
// launch of a workspace.
type ScratchFill string

// The scratch fills.
const (
	// FillZero: zeroed once, for a kernel that counts or accumulates in
	// it and leaves it as it found it.
	FillZero ScratchFill = "zero"
	// FillPoison: the gates' NaN poison, so that a kernel that reads an
	// element it did not write this step fails the numerics gate.
	FillPoison ScratchFill = "poison"
	// FillNever: not filled by ktune (it holds what the workspace held:
	// zeros after allocation, then whatever the kernel left).
	FillNever ScratchFill = "never"
)

// ParseScratchFill parses a scratch buffer's fill.
func ParseScratchFill(s string) (ScratchFill, error) {
	switch f := ScratchFill(s); f {
	case FillZero, FillPoison, FillNever:
		return f, nil
	}
	f, _, err := constFill(s) // scratchfill.go
	return f, err
}

// A Scratch is a named scratch buffer as a spec declares it: the engines'
// exp_sums, max_logits and tmp_out arrays. Bytes is an expression over
// the geometry symbols and the defines.
type Scratch struct {
	Name  string
	Bytes string
	Fill  ScratchFill
}

// A ScratchBuf is a scratch buffer at one point: its size evaluated.
type ScratchBuf struct {
	Name  string
	Bytes int64
	Fill  ScratchFill
}

// scratchAlign is where each scratch buffer starts in the workspace
// allocation: past io.workspace, each 256-byte aligned as cudaMalloc's
// own buffers are, so a kernel's vector loads see the alignment they
// would in the engine.
const scratchAlign = 256

// ScratchArg is the argument that passes a named scratch buffer.
func ScratchArg(name string) Arg { return Arg{Type: ArgPtr, Name: name, Value: "scratch"} }

// IsScratch reports whether the argument passes a named scratch buffer.
func (a Arg) IsScratch() bool { return a.Type == ArgPtr && a.Value == "scratch" }

// ScratchText is the canonical text of a point's scratch buffers, for
// its hash and for a layout that must compare with ==.
func ScratchText(bufs []ScratchBuf) string {
	parts := make([]string, len(bufs))
	for i, b := range bufs {
		parts[i] = b.Name + " " + strconv.FormatInt(b.Bytes, 10) + " " + string(b.Fill)
	}
	return strings.Join(parts, "; ")
}

// ParseScratchText reads ScratchText back.
func ParseScratchText(s string) []ScratchBuf {
	if s == "" {
		return nil
	}
	var out []ScratchBuf
	for _, p := range strings.Split(s, "; ") {
		f := strings.Fields(p)
		n, _ := strconv.ParseInt(f[1], 10, 64)
		out = append(out, ScratchBuf{f[0], n, ScratchFill(f[2])})
	}
	return out
}

// A ScratchSpan is where one scratch buffer lies in the workspace
// allocation.
type ScratchSpan struct {
	ScratchBuf
	Offset int64
}

// ScratchSpans lays the scratch buffers out after io.workspace's bytes.
func (d Dims) ScratchSpans() []ScratchSpan {
	off := roundUp64(d.WorkspaceBytes, scratchAlign)
	var out []ScratchSpan
	for _, b := range d.Scratch {
		out = append(out, ScratchSpan{b, off})
		off = roundUp64(off+b.Bytes, scratchAlign)
	}
	return out
}

// scratchEnd is the bytes of the workspace allocation that io.workspace
// and the scratch buffers need together.
func (d Dims) scratchEnd() int64 {
	spans := d.ScratchSpans()
	if len(spans) == 0 {
		return d.WorkspaceBytes
	}
	last := spans[len(spans)-1]
	return last.Offset + last.Bytes
}

func roundUp64(n, a int64) int64 { return (n + a - 1) / a * a }
