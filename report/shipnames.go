package report

import (
	"slices"
	"sort"
	"strings"
)

// A ShipConfig is one configuration that "what to ship" ships somewhere:
// the short name its tables print and the full configuration it stands
// for.
type ShipConfig struct {
	Name   string `json:"name"`
	Kernel string `json:"kernel"` // the kernel source the variant builds
	Config string `json:"config"` // ConfigLabel: variant, SPLITS and every other define
}

// nameShipped gives every shipped configuration its short name: the
// variant alone when the report ships one configuration of it, otherwise
// the variant with the defines whose values tell its shipped
// configurations apart ("d2 SPLITS=64" beside "d2 SPLITS=8"). The full
// defines stay in the table ShipConfigs lists, so that a table row reads
// at a glance and still names exactly what to ship.
func nameShipped(ship []ShipShape) []ShipConfig {
	byVariant := map[string]map[string]bool{} // variant → configurations
	kernels := map[string]string{}            // configuration → kernel
	for i := range ship {
		for _, rg := range ship[i].Ranges {
			kernels[rg.Config] = rg.Kernel
			if byVariant[rg.Variant] == nil {
				byVariant[rg.Variant] = map[string]bool{}
			}
			byVariant[rg.Variant][rg.Config] = true
		}
	}
	names := map[string]string{} // configuration → short name
	for v, cfgs := range byVariant {
		var list []string
		for c := range cfgs {
			list = append(list, c)
		}
		for c, n := range shortNames(v, list) {
			names[c] = n
		}
	}
	var out []ShipConfig
	for c, n := range names {
		out = append(out, ShipConfig{Name: n, Kernel: kernels[c], Config: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := range ship {
		for j := range ship[i].Ranges {
			rg := &ship[i].Ranges[j]
			rg.Name = names[rg.Config]
			for k := range rg.Points {
				pt := &rg.Points[k]
				for u := range pt.Unmeasured {
					if n, ok := names[pt.Unmeasured[u]]; ok {
						pt.Unmeasured[u] = n
					}
				}
			}
		}
	}
	return out
}

// shortNames names the configurations cfgs of variant v (ConfigLabels,
// "v KEY=value …"): v alone for one, else v with the KEY=value tokens
// that are not common to all of them.
func shortNames(v string, cfgs []string) map[string]string {
	out := map[string]string{}
	if len(cfgs) == 1 {
		out[cfgs[0]] = v
		return out
	}
	count := map[string]int{}
	for _, c := range cfgs {
		for _, tok := range strings.Fields(c)[1:] {
			count[tok]++
		}
	}
	for _, c := range cfgs {
		parts := []string{v}
		for _, tok := range strings.Fields(c)[1:] {
			if count[tok] < len(cfgs) {
				parts = append(parts, tok)
			}
		}
		out[c] = strings.Join(parts, " ")
	}
	return out
}

// markUnmeasured sets, at each point of ranges, the configurations
// shipped at the neighbouring ranges that were not measured (passing
// every gate) at the point's nkv: there the shipped configuration wins
// only because nothing else was measured, which the report says.
func markUnmeasured(ranges []ShipRange, measured map[int]map[string]bool) {
	for i := range ranges {
		var near []string
		for _, j := range []int{i - 1, i + 1} {
			if j >= 0 && j < len(ranges) && ranges[j].Config != ranges[i].Config {
				near = append(near, ranges[j].Config)
			}
		}
		for k := range ranges[i].Points {
			pt := &ranges[i].Points[k]
			for _, c := range near {
				if !measured[pt.NKV][c] && !slices.Contains(pt.Unmeasured, c) {
					pt.Unmeasured = append(pt.Unmeasured, c)
				}
			}
		}
	}
}
