package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/results"
)

// An Override changes what points measure, against their spec: for
// cross-checks with an outside instrument (running under ncu, say) where
// the gates or some probes would only add launches to the profile.
type Override struct {
	Probes  []results.Probe // non-nil: measure these probes only
	NoGates bool            // skip the numerics gates
}

// Apply changes the points in place. A point it changes gets a new hash,
// derived from the old one and the override: its record lacks gates or
// probes a full point has, so it must not stand in for the full point
// when the directory is swept again without the override.
func (o Override) Apply(points []*Point) {
	for _, p := range points {
		var changed []string
		if o.Probes != nil && !slices.Equal(o.Probes, p.Probes) {
			p.Probes = slices.Clone(o.Probes)
			ps := make([]string, len(o.Probes))
			for i, pr := range o.Probes {
				ps[i] = string(pr)
			}
			changed = append(changed, "probes="+strings.Join(ps, ","))
		}
		if o.NoGates && (len(p.GateNKV) > 0 || len(p.ReplayNKV) > 0 || p.Twin != nil) {
			p.GateNKV, p.Twin, p.CaptureNKV, p.ReplayNKV = nil, nil, 0, nil
			changed = append(changed, "no-gates")
		}
		if len(changed) > 0 {
			p.Hash = Rehash(p.Hash, strings.Join(changed, ";"))
		}
	}
}

// Rehash derives a hash of the same length as old (at least 16 hex digits).
func Rehash(old, change string) string {
	sum := sha256.Sum256([]byte(old + "\x00" + change))
	h := hex.EncodeToString(sum[:])
	if n := len(old); n >= 16 && n < len(h) {
		h = h[:n]
	}
	return h
}
