package abi

import (
	"fmt"
	"strconv"
	"strings"
)

// A shape's identity is every field that changes a result: the
// dimensions, the K/V type and its scale mode, the batch, the capacity
// (it sets the stride between sequences and heads in K and V, so the same
// nkv at another capacity is another memory access pattern) and every
// attention option. Its label (Name) is not part of it, so that results
// from another tool or spec (a PyTorch reference labelled "7b" next to a
// sweep's "7b-b1") line up when they measured the same problem. The point
// hash, the report's and the landing gate's rows, the search's
// configurations and the dispatch tables all tell shapes apart by it;
// TestIdentityCoversEveryField perturbs every field and fails when the
// identity does not change.

// Identity is the shape's identity as text: "h28-kv4-d128-f16-b1-cap131072"
// for plain attention, followed by the options' Label when there are any
// ("… window=4096"). Two shapes have the same Identity exactly when they
// differ at most in Name.
func (s Shape) Identity() string {
	id := s.Dims() + "-cap" + strconv.Itoa(s.Capacity)
	if l := s.Attention.Label(); l != "" {
		id += " " + l
	}
	return id
}

// Dims names the shape by its dimensions, K/V type and batch, without
// capacity or options: "h28-kv4-d128-f16-b1", the name of a shape that has
// no label.
func (s Shape) Dims() string {
	return fmt.Sprintf("h%d-kv%d-d%d-%s-b%d", s.Heads, s.KVHeads, s.HeadDim, s.KV(), s.Batch)
}

// HashText is the shape in the point hash's encoding (format "ktune point
// v1"): its label and every field of its identity, and the attention
// options, "" for plain attention. The encoding is older than Identity
// and stays as it is, so that recorded hashes keep matching their plans.
func (s Shape) HashText() (shape, attention string) {
	shape = fmt.Sprintf("%s %d %d %d %s %d %d", s.Name, s.Heads, s.KVHeads, s.HeadDim, s.KV(), s.Batch, s.Capacity)
	if !s.Attention.IsZero() {
		attention = fmt.Sprintf("%+v", s.Attention)
	}
	return shape, attention
}

// Label is the text of the attention options, "" for plain attention:
// "q_len=4 softcap=50 alibi=buffer sinks window=4096 mla=512/latent
// lse=log2", each option present only when set, in this order.
func (a Attention) Label() string {
	var p []string
	if a.QLen > 1 {
		p = append(p, "q_len="+strconv.Itoa(a.QLen))
	}
	if a.Softcap > 0 {
		p = append(p, "softcap="+strconv.FormatFloat(a.Softcap, 'g', -1, 64))
	}
	if a.ALiBi != "" {
		p = append(p, "alibi="+string(a.ALiBi))
	}
	if a.Sinks {
		p = append(p, "sinks")
	}
	if a.Window > 0 {
		p = append(p, "window="+strconv.Itoa(a.Window))
	}
	if a.MLA != (MLA{}) {
		p = append(p, "mla="+strconv.Itoa(a.MLA.DV)+"/"+string(a.MLA.Layout))
	}
	if a.LSE != "" {
		p = append(p, "lse="+string(a.LSE))
	}
	return strings.Join(p, " ")
}
