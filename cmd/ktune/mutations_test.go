package main

import (
	"encoding/json"
	"strings"
)

// The catalogue of damage the metamorphic test and the fuzz target apply
// to committed results: each mutation is one edit a crash, a careless
// script or a person with jq could make to one record. A decision on the
// edited input must never be more permissive than on the intact one.

// An input is the files of one command line, each a list of records.
type input [][]jrec

func (in input) clone() input {
	out := make(input, len(in))
	for i, f := range in {
		out[i] = make([]jrec, len(f))
		for j, r := range f {
			out[i][j] = cloneJ(r)
		}
	}
	return out
}

// A mutation edits record i of file f (the input is a clone); arg picks
// among its variants (which probe, which status…).
type mutation struct {
	name  string
	apply func(in input, f, i, arg int) input
}

// eachProbe calls fn on probe arg (mod the number) of r, or on every probe
// when arg < 0.
func eachProbe(r jrec, arg int, fn func(m jrec)) {
	ps := probesOf(r)
	for k, p := range ps {
		if arg < 0 || k == arg%len(ps) {
			fn(p.(jrec))
		}
	}
}

func mapSamples(r jrec, arg int, fn func(x float64) any) {
	eachProbe(r, arg, func(m jrec) {
		s, _ := m["samples_ns"].([]any)
		for k := range s {
			x, _ := s[k].(json.Number).Float64()
			s[k] = fn(x)
		}
	})
}

// topFields are the fields nulled or re-cased, the ones a verdict reads.
var topFields = []string{"status", "replayed", "landed", "gates", "probes", "config", "env", "hash", "time"}

var statuses = []string{"ok", "gate_failed", "fault", "error", "compile_failed"}

var catalogue = []mutation{
	{"drop samples", func(in input, f, i, arg int) input {
		eachProbe(in[f][i], arg, func(m jrec) { delete(m, "samples_ns") })
		return in
	}},
	{"empty samples", func(in input, f, i, arg int) input {
		eachProbe(in[f][i], arg, func(m jrec) { m["samples_ns"] = []any{} })
		return in
	}},
	{"negate samples", func(in input, f, i, arg int) input {
		mapSamples(in[f][i], arg, func(x float64) any { return -x })
		return in
	}},
	{"zero samples", func(in input, f, i, arg int) input {
		mapSamples(in[f][i], arg, func(float64) any { return 0 })
		return in
	}},
	// JSON has no NaN: jq writes nan as null.
	{"NaN sample", func(in input, f, i, arg int) input {
		first := true
		mapSamples(in[f][i], arg, func(x float64) any {
			if first {
				first = false
				return nil
			}
			return x
		})
		return in
	}},
	// Positive and finite, but faster than any device runs the point:
	// below the launch floor, or reading K and V faster than the memory
	// can (evidence.FloorNS).
	{"impossible samples", func(in input, f, i, arg int) input {
		mapSamples(in[f][i], arg, func(float64) any { return 1e-300 })
		return in
	}},
	{"samples a thousand times faster", func(in input, f, i, arg int) input {
		mapSamples(in[f][i], arg, func(x float64) any { return x / 1000 })
		return in
	}},
	{"change a summary", func(in input, f, i, arg int) input {
		eachProbe(in[f][i], arg, func(m jrec) {
			m["summary"] = jrec{"n": 1000, "median": 1, "min": 1, "max": 1, "q1": 1, "q3": 1, "rel_noise": 0}
			m["gbps"], m["pct_bw"] = 1e9, 100
		})
		return in
	}},
	{"delete a record", func(in input, f, i, arg int) input {
		in[f] = append(in[f][:i], in[f][i+1:]...)
		return in
	}},
	{"delete a probe", func(in input, f, i, arg int) input {
		ps := probesOf(in[f][i])
		if len(ps) > 0 {
			k := arg % len(ps)
			in[f][i]["probes"] = append(ps[:k:k], ps[k+1:]...)
		}
		return in
	}},
	{"duplicate with another status", func(in input, f, i, arg int) input {
		d := cloneJ(in[f][i])
		st := statuses[arg%len(statuses)]
		if d["status"] == st {
			st = statuses[(arg+1)%len(statuses)]
		}
		d["status"] = st
		if arg%2 == 0 {
			d["time"] = "2099-01-01T00:00:00Z"
			in[f] = append(in[f], d)
		} else {
			d["time"] = "2000-01-01T00:00:00Z"
			in[f] = append([]jrec{d}, in[f]...)
		}
		return in
	}},
	{"change the status", func(in input, f, i, arg int) input {
		in[f][i]["status"] = statuses[arg%len(statuses)]
		return in
	}},
	{"flip a gate", func(in input, f, i, arg int) input {
		gs, _ := in[f][i]["gates"].([]any)
		if len(gs) > 0 {
			g := gs[arg%len(gs)].(jrec)
			g["pass"] = g["pass"] != true
		}
		return in
	}},
	{"null a field", func(in input, f, i, arg int) input {
		in[f][i][topFields[arg%len(topFields)]] = nil
		return in
	}},
	{"delete a field", func(in input, f, i, arg int) input {
		delete(in[f][i], topFields[arg%len(topFields)])
		return in
	}},
	{"re-case a field", func(in input, f, i, arg int) input {
		r := in[f][i]
		k := topFields[arg%len(topFields)]
		if v, ok := r[k]; ok {
			delete(r, k)
			r[strings.ToUpper(k[:1])+k[1:]] = v
		}
		return in
	}},
	{"move a record to another file", func(in input, f, i, arg int) input {
		r := in[f][i]
		in[f] = append(in[f][:i], in[f][i+1:]...)
		return append(in, []jrec{r})
	}},
	{"mix environments", func(in input, f, i, arg int) input {
		env, _ := in[f][i]["env"].(jrec)
		if env == nil {
			return in
		}
		switch arg % 4 {
		case 0:
			env["uuid"] = "GPU-00000000-other"
		case 1:
			env["driver"] = "12.4"
		case 2:
			env["clock_mhz"] = 1200
		default:
			env["device"] = "NVIDIA H100 80GB HBM3"
		}
		return in
	}},
	{"change the variant", func(in input, f, i, arg int) input {
		cfgOf(in[f][i])["variant"] = []string{"r4", "d2", "d2-after-oob", "oob"}[arg%4]
		return in
	}},
	{"unmark a fixture", func(in input, f, i, arg int) input {
		delete(cfgOf(in[f][i]), "fixture")
		return in
	}},
}
