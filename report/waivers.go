package report

import (
	"slices"
	"strings"
)

// A Waived is a configuration whose records carry the spec's waivers
// (results.Record.Waivers): an input set judged by its own bounds or not
// at all, or a gate the spec's launch mode leaves out (graph: never: no
// replay gate). Its gates passed, if they did, under them.
type Waived struct {
	Row     *Row     // the first row of the configuration
	Waivers []string // every waiver of its records, first seen first
}

// waived lists the configurations of rep.Rows with waivers, in table order.
func (rep *Report) waived() []Waived {
	var out []Waived
	at := map[ConfigKey]int{}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if len(r.rec.Waivers) == 0 {
			continue
		}
		j, ok := at[r.key.ConfigKey]
		if !ok {
			j = len(out)
			at[r.key.ConfigKey] = j
			out = append(out, Waived{Row: r})
		}
		for _, w := range r.rec.Waivers {
			if !slices.Contains(out[j].Waivers, w) {
				out[j].Waivers = append(out[j].Waivers, w)
			}
		}
	}
	return out
}

// writeWaived writes report.md's Waivers section, nothing without any.
func (rep *Report) writeWaived(ew *errWriter) {
	if len(rep.Waived) == 0 {
		return
	}
	ew.printf("\n## Waivers\n\nThe spec waived these gates or input sets for a configuration; its gates passed, where they did, without them.\n\n")
	for _, w := range rep.Waived {
		ew.printf("- %s %s: %s\n", w.Row.Label, ConfigLabel(w.Row.Config()), strings.ReplaceAll(strings.Join(w.Waivers, "; "), "|", `\|`))
	}
}
