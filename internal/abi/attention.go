package abi

// Attention are the options of a shape that change what attention
// computes, as the engines' kernels take them. The zero value is plain
// decode attention: one query token per sequence, softmax(q·Kᵀ/√d)·V over
// the whole context, K and V of one width. Every field is omitted from a
// record when unset, so plain shapes read and hash as they did before the
// options existed. internal/spec/doc.go specifies each option with its
// error bound; package oracle computes them.
//
// The order of the score pipeline for a query at position p and a row r:
//
//	s = q·k_r / √head_dim                 (head_dim: the key width)
//	s = softcap · tanh(s / softcap)       softcap > 0
//	s = s + slope_h · (r − p)             alibi
//	rows outside [p − window, p] masked   window > 0 (and r ≤ p always)
//	weights = exp(s) / (Σ exp(s) + exp(sink_h))   sinks
//	out = Σ weights · v_r;  lse = log(Σ exp(s) + exp(sink_h))
type Attention struct {
	// Softcap > 0 caps every scaled score with softcap·tanh(s/softcap)
	// before any bias (Gemma 2's 50, Grok's 30).
	Softcap float64 `json:"softcap,omitempty"`
	// ALiBi adds slope_h·(r − p) to the score of row r for a query at
	// position p: the slopes from the standard formula
	// (ALiBiStandard: 2^(−8(h+1)/H) for H a power of two, the
	// interleaved extension otherwise) or from an alibi_slopes buffer
	// the gate inputs draw (ALiBiBuffer).
	ALiBi ALiBi `json:"alibi,omitempty"`
	// Sinks adds one learned logit per query head to the softmax's
	// denominator, with no value row (the sinks buffer, f32 [heads]).
	Sinks bool `json:"sinks,omitempty"`
	// Window > 0 is the left window: a query at position p attends rows
	// [p − Window, p], Window + 1 rows (FlashAttention's window_size_left).
	Window int `json:"window,omitempty"`
	// QLen is the number of new query tokens per sequence (0 or 1: one;
	// at most MaxQLen). The sequence's nkv counts them: query t sits at
	// position nkv − QLen + t and attends rows up to it (causal within
	// the new tokens). q is [batch][q_len][heads][dk] and out
	// [batch][q_len][heads][dv].
	QLen int `json:"q_len,omitempty"`
	// MLA gives V its own width and says where V lives; zero: K and V
	// are both head_dim wide, in their own buffers. A value, not a
	// pointer, so that shapes compare with ==.
	MLA MLA `json:"mla,omitzero"`
	// LSE declares the kernel's log-sum-exp output, lse [batch][q_len]
	// [heads] in f32, gated like out; "" when the kernel writes none.
	LSE LSEBase `json:"lse,omitempty"`
}

// MaxQLen is the largest q_len: speculative decoding and multi-token
// prediction draft a handful of tokens, and the oracle's cost grows with it.
const MaxQLen = 16

// An ALiBi says where a shape's ALiBi slopes come from.
type ALiBi string

// The ALiBi sources.
const (
	ALiBiStandard ALiBi = "standard" // the formula of the ALiBi paper, computed by the kernel
	ALiBiBuffer   ALiBi = "buffer"   // an alibi_slopes buffer, f32 [heads], drawn by the gate inputs
)

// An LSEBase is the base of a log-sum-exp output.
type LSEBase string

// The LSE bases.
const (
	LSENatural LSEBase = "ln"   // natural log, as FlashAttention-2 returns it
	LSELog2    LSEBase = "log2" // base 2, as kernels that use exp2 keep it
)

// An MLA is multi-head latent attention's cache: K rows of the shape's
// head_dim (576 for DeepSeek's latent + rope part), V rows of DV.
type MLA struct {
	DV int `json:"dv"` // the value width (512)
	// Layout is where V is read from.
	Layout MLALayout `json:"layout"`
}

// An MLALayout is where an MLA kernel reads V.
type MLALayout string

// The MLA layouts.
const (
	// MLALatent: one latent cache; V is the first DV channels of every K
	// row, and there is no V buffer.
	MLALatent MLALayout = "latent"
	// MLASplit: K and V in their own buffers, DK and DV wide.
	MLASplit MLALayout = "split"
)

// Queries is the number of query tokens per sequence (QLen, at least 1).
func (a Attention) Queries() int { return max(1, a.QLen) }

// VDim is the value width for head_dim d, the key width.
func (a Attention) VDim(d int) int {
	if a.MLA.DV > 0 {
		return a.MLA.DV
	}
	return d
}

// Latent reports whether V is read from K's rows.
func (a Attention) Latent() bool { return a.MLA.Layout == MLALatent }

// IsZero reports whether a is plain attention (for omitzero).
func (a Attention) IsZero() bool { return a == Attention{} }
