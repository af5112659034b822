package results

import (
	"fmt"
	"slices"
	"strings"
)

// Probes are the measurement methods, in their canonical order.
var Probes = []Probe{ProbeCold, ProbeHot, ProbeGraph}

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
