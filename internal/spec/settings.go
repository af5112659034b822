package spec

import (
	"strings"

	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/measure"
	"gopkg.in/yaml.v3"
)

// The decoders of the sections that configure how points are checked and
// measured rather than what they are: probes, gates, measure, engine.

// probes decodes the list of probe names.
func (d *decoder) probes(n *yaml.Node, s *Spec) {
	l, ok := d.list(n, "probes", false)
	if !ok {
		return
	}
	if len(l) == 0 {
		d.errorf(n, "probes: empty list: name at least one of cold, hot, graph")
	}
	s.Probes = s.Probes[:0:0]
	for _, e := range l {
		p, ok := d.scalar(e, "probes")
		if !ok {
			continue
		}
		_, err := measure.ParseProbe(p)
		switch {
		case err != nil:
			d.errorf(e, "probes: unknown probe %q (known: %s)", p, strings.Join(measure.ProbeNames(), ", "))
		case contains(s.Probes, p):
			d.errorf(e, "probes: %s repeated", p)
		default:
			s.Probes = append(s.Probes, p)
		}
	}
}

// gateKeys are the keys of gates: the settings, then the KV types, each
// of which may override the bounds for its shapes.
var gateKeys = append([]string{"nkv", "max_abs", "max_rel", "nmse", "seed", "inputs", "stale"}, kvtypeNames()...)

func kvtypeNames() []string {
	var out []string
	for _, t := range kvtype.All {
		out = append(out, t.Name)
	}
	return out
}

var boundKeys = []string{"max_abs", "max_rel", "nmse"}

// bound decodes one tolerance bound (> 0) into dst.
func (d *decoder) bound(v *yaml.Node, k string, dst *float64) {
	if x, ok := d.number(v, k); ok {
		if x <= 0 {
			d.errorf(v, "%s: want a bound > 0, got %v", k, x)
		}
		*dst = x
	}
}

func (d *decoder) gates(n *yaml.Node, g *Gates) {
	d.fields(n, "gates", gateKeys, func(key string, kn, v *yaml.Node) {
		if _, err := kvtype.Lookup(key); err == nil {
			var b Bounds
			d.fields(v, "gates."+key, boundKeys, func(bk string, _, bv *yaml.Node) {
				d.bound(bv, "gates."+key+"."+bk, map[string]*float64{"max_abs": &b.MaxAbs, "max_rel": &b.MaxRel, "nmse": &b.NMSE}[bk])
			})
			if g.KV == nil {
				g.KV = map[string]Bounds{}
			}
			g.KV[key] = b
			return
		}
		k := "gates." + key
		switch key {
		case "nkv":
			if l, ok := d.list(v, k, false); ok {
				g.NKV = g.NKV[:0:0]
				for _, e := range l {
					if x, ok := d.integer(e, k); ok {
						if x < 1 {
							d.errorf(e, "%s: %d is not a context length (want ≥ 1)", k, x)
						}
						g.NKV = append(g.NKV, x)
					}
				}
				if len(l) == 0 {
					d.errorf(v, "%s: empty list", k)
				}
			}
		case "max_abs", "max_rel", "nmse":
			d.bound(v, k, map[string]*float64{"max_abs": &g.MaxAbs, "max_rel": &g.MaxRel, "nmse": &g.NMSE}[key])
		case "inputs":
			g.Inputs = d.inputWaivers(v, k) // waivers.go
		case "stale":
			g.Stale = d.staleDecision(kn, v, k) // waivers.go
		case "seed":
			var x uint64
			if _, ok := d.scalar(v, k); ok && (v.Tag != "!!int" || v.Decode(&x) != nil) {
				d.errorf(v, "%s: want an unsigned integer, got %q", k, v.Value)
			}
			g.Seed = x
		}
	})
}

var measureKeys = []string{"warmup", "min_samples", "max_samples", "max_noise", "budget", "hot_batch", "timeout"}

func (d *decoder) measure(n *yaml.Node, m *Measure) {
	seen := d.fields(n, "measure", measureKeys, func(key string, _, v *yaml.Node) {
		k := "measure." + key
		var lowest int
		var ip *int
		switch key {
		case "warmup":
			ip, lowest = &m.Warmup, 0
		case "min_samples":
			ip, lowest = &m.MinSamples, 1
		case "max_samples":
			ip, lowest = &m.MaxSamples, 1
		case "hot_batch":
			ip, lowest = &m.HotBatch, 1
		case "max_noise":
			if x, ok := d.number(v, k); ok {
				if x <= 0 || x >= 1 {
					d.errorf(v, "%s: want a fraction between 0 and 1 (0.03 = 3%%), got %v", k, x)
				}
				m.MaxNoise = x
			}
		case "budget", "timeout":
			if x, ok := d.seconds(v, k); ok {
				if x <= 0 {
					d.errorf(v, "%s: want a duration > 0, got %q", k, v.Value)
				}
				if key == "budget" {
					m.BudgetSec = x
				} else {
					m.TimeoutSec = x
				}
			}
		}
		if ip != nil {
			if x, ok := d.integer(v, k); ok {
				if x < lowest {
					d.errorf(v, "%s: want ≥ %d, got %d", k, lowest, x)
				}
				*ip = x
			}
		}
	})
	if m.MaxSamples < m.MinSamples {
		at := n
		if k, ok := seen["max_samples"]; ok {
			at = k
		}
		d.errorf(at, "measure: max_samples %d is below min_samples %d", m.MaxSamples, m.MinSamples)
	}
}

func (d *decoder) engine(n *yaml.Node) *Engine {
	e := &Engine{}
	seen := d.fields(n, "engine", []string{"layers", "step_ms"}, func(key string, _, v *yaml.Node) {
		switch key {
		case "layers":
			if x, ok := d.integer(v, "engine.layers"); ok {
				if x < 1 {
					d.errorf(v, "engine.layers: want ≥ 1, got %d", x)
				}
				e.Layers = x
			}
		case "step_ms":
			if x, ok := d.number(v, "engine.step_ms"); ok {
				if x <= 0 {
					d.errorf(v, "engine.step_ms: want > 0, got %v", x)
				}
				e.StepMS = x
			}
		}
	})
	if deref(n).Kind == yaml.MappingNode {
		d.require(n, "engine", seen, "layers", "step_ms")
	}
	return e
}
