package results

import "strings"

// InvariantIn returns the contexts a passing invariance gate checked
// ("batch", "position", "arm": its Detail's prefix), nil for any other
// gate or a failure.
func (g Gate) InvariantIn() []string {
	if g.Kind != GateInvariance || !g.Pass {
		return nil
	}
	head, _, ok := strings.Cut(g.Detail, ":")
	if !ok {
		return nil
	}
	return strings.Split(head, ", ")
}
