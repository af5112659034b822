package dispatch

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/abi"
)

// The dispatch of a shape is chosen per number of query tokens: a q_len-4
// step (speculative decoding) has its own measurements and its own best
// configuration, so q_len is part of a table's shape key, printed in the
// YAML (q_len, omitted at 1) and matched by the header's lookup. The other
// attention options change the kernel an engine must build (its defines
// and arguments), so they key a shape too, and are printed as one label.

// optionsLabel is the text of a shape's attention options other than
// q_len, "" for none: "softcap=50 sinks", in a fixed order.
func optionsLabel(a abi.Attention) string {
	var p []string
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
	if a.MLA.DV > 0 {
		p = append(p, "mla="+strconv.Itoa(a.MLA.DV)+"/"+string(a.MLA.Layout))
	}
	if a.LSE != "" {
		p = append(p, "lse="+string(a.LSE))
	}
	return strings.Join(p, " ")
}

// compareAttention orders shapes by q_len, then by their other options.
func compareAttention(a, b abi.Attention) int {
	return cmp.Or(cmp.Compare(a.Queries(), b.Queries()), cmp.Compare(optionsLabel(a), optionsLabel(b)))
}

// attentionSuffix is what a shape's label adds for its options.
func attentionSuffix(a abi.Attention) string {
	s := ""
	if q := a.Queries(); q > 1 {
		s += ", q_len " + strconv.Itoa(q)
	}
	if o := optionsLabel(a); o != "" {
		s += ", " + o
	}
	return s
}
