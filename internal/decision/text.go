package decision

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/results"
)

// The texts a report and a verdict both print for a failure, so that the
// two say it in the same words.

// GateEvidence renders a gate's evidence on one line.
func GateEvidence(g *results.Gate) string {
	var parts []string
	switch g.Kind {
	case results.GateTolerance:
		parts = append(parts, fmt.Sprintf("max_abs=%.3g max_rel=%.3g nmse=%.3g", g.MaxAbs, g.MaxRel, g.NMSE))
		if g.NaNs > 0 {
			parts = append(parts, fmt.Sprintf("nans=%d", g.NaNs))
		}
	default:
		if g.Twin != "" {
			parts = append(parts, "twin="+g.Twin)
		}
		if g.Buffer != "" {
			parts = append(parts, "buffer="+g.Buffer)
		}
		if g.DiffBytes > 0 || g.FirstDiff > 0 {
			parts = append(parts, fmt.Sprintf("diff_bytes=%d first_diff=%d", g.DiffBytes, g.FirstDiff))
		}
	}
	parts = append(parts, fmt.Sprintf("seed=%d", g.Seed))
	if g.Detail != "" {
		parts = append(parts, OneLine(g.Detail))
	}
	return strings.Join(parts, " ")
}

// OneLine returns the first line of s, trimmed, marked " …" when cut.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}
