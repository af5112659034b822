package spec

import (
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
	"gopkg.in/yaml.v3"
)

// attentionKeys are the shape keys of the attention options
// (abi.Attention); lse is the variant's (a kernel declares what it
// writes).
var attentionKeys = []string{"softcap", "alibi", "sinks", "window", "q_len", "mla"}

// attention decodes one attention option of a shape into a.
func (d *decoder) attention(a *abi.Attention, key, k string, v *yaml.Node) {
	switch key {
	case "softcap":
		if x, ok := d.number(v, k); ok {
			// Below 1 every score is capped to nearly nothing; the engines
			// use 20 to 50.
			if x < 1 || x > 1e4 {
				d.errorf(v, "%s: want 1 to 10000 (the cap on |score|; Gemma 2 uses 50), got %v", k, x)
			}
			a.Softcap = x
		}
	case "alibi":
		a.ALiBi = abi.ALiBi(d.str(v, k))
		if a.ALiBi != abi.ALiBiStandard && a.ALiBi != abi.ALiBiBuffer {
			d.errorf(v, "%s: want %s (the formula's slopes) or %s (an alibi_slopes buffer), got %q", k, abi.ALiBiStandard, abi.ALiBiBuffer, v.Value)
		}
	case "sinks":
		switch p, ok := d.scalar(v, k); {
		case ok && p == "true":
			a.Sinks = true
		case ok && p != "false":
			d.errorf(v, "%s: want true or false, got %q", k, p)
		}
	case "window":
		a.Window = d.bounded(v, k, 1, 1<<30)
	case "q_len":
		a.QLen = d.bounded(v, k, 1, abi.MaxQLen)
	case "mla":
		seen := d.fields(v, k, []string{"dv", "layout"}, func(f string, _, fv *yaml.Node) {
			switch f {
			case "dv":
				a.MLA.DV = d.bounded(fv, k+".dv", 4, 1024)
			case "layout":
				a.MLA.Layout = abi.MLALayout(d.str(fv, k+".layout"))
				if a.MLA.Layout != abi.MLALatent && a.MLA.Layout != abi.MLASplit {
					d.errorf(fv, "%s.layout: want %s (V is the first dv channels of K's rows) or %s (a V buffer of its own), got %q",
						k, abi.MLALatent, abi.MLASplit, fv.Value)
				}
			}
		})
		d.require(v, k, seen, "dv", "layout")
	}
}

// checkAttention checks the options of shape sh against each other and
// the shape.
func (d *decoder) checkAttention(n *yaml.Node, where string, sh *Shape) {
	a := sh.Attention
	if a.MLA.DV > sh.HeadDim && sh.HeadDim > 0 {
		d.errorf(n, "%s.mla.dv: %d is wider than head_dim %d (K's width: MLA's latent + rope part)", where, a.MLA.DV, sh.HeadDim)
	}
	if a.Latent() && sh.KVType().Scaled && sh.KVScale != kvtype.ScaleShared {
		d.errorf(n, "%s.mla: a latent cache reads V from K's bytes, so K and V have one scale: say kv_scale: %s", where, kvtype.ScaleShared)
	}
}

// lse decodes a variant's lse: the base of the log-sum-exp it writes.
func (d *decoder) lse(v *yaml.Node, k string) abi.LSEBase {
	b := abi.LSEBase(d.str(v, k))
	if !slices.Contains([]abi.LSEBase{abi.LSENatural, abi.LSELog2}, b) {
		d.errorf(v, "%s: want %s or %s (the base of the log-sum-exp the kernel writes), got %q", k, abi.LSENatural, abi.LSELog2, v.Value)
	}
	return b
}
