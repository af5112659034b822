// Package measure names ktune's measurement methods, the probes: the
// vocabulary a spec's probes list, a plan's points, the command line and
// a record's measurements share. It sits below all of them, so that the
// spec format names probes without reaching down to the results format,
// and a probe name is parsed in one place (ParseProbe).
package measure

import (
	"fmt"
	"slices"
	"strings"
)

// Probe names a measurement method.
type Probe string

const (
	// Cold flushes L2 before every sample: what a decode step sees when
	// the rest of the layer has evicted K/V from the cache.
	Cold Probe = "cold"
	// Hot times a back-to-back batch of launches over warm caches.
	Hot Probe = "hot"
	// Graph replays partial+combine captured in one CUDA graph: what an
	// engine that replays its decode graph sees.
	Graph Probe = "graph"
)

// Probes are the measurement methods, in their canonical order: the order
// of every table and plot, cold first because it is what a decode step
// sees after the rest of the layer has evicted K/V from L2.
var Probes = []Probe{Cold, Hot, Graph}

// ProbeNames returns the probe names, for messages.
func ProbeNames() []string {
	out := make([]string, len(Probes))
	for i, p := range Probes {
		out[i] = string(p)
	}
	return out
}

// ParseProbe parses one probe name.
func ParseProbe(s string) (Probe, error) {
	p := Probe(strings.TrimSpace(s))
	if !slices.Contains(Probes, p) {
		return "", fmt.Errorf("unknown probe %q: want %s", s, strings.Join(ProbeNames(), ", "))
	}
	return p, nil
}

// ParseProbes parses a comma-separated probe list such as "cold,hot";
// repeats are dropped.
func ParseProbes(s string) ([]Probe, error) {
	var out []Probe
	for _, name := range strings.Split(s, ",") {
		p, err := ParseProbe(name)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
