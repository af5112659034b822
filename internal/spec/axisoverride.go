package spec

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// An AxisOverride replaces one axis's values for one run (ktune plan,
// check, sweep --axis NAME=V1,V2): to narrow an axis or try other values
// without editing the spec. The values go through the checks the file's
// own would; a point of the same values hashes as it would from the file.
type AxisOverride struct {
	Name   string
	Values []string
}

// ParseAxisOverride reads NAME=V1,V2,…
func ParseAxisOverride(arg string) (AxisOverride, error) {
	name, list, ok := strings.Cut(arg, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(list) == "" {
		return AxisOverride{}, fmt.Errorf("--axis %q: want NAME=V1,V2,… (e.g. nkv=2048,8192)", arg)
	}
	var vals []string
	for _, v := range strings.Split(list, ",") {
		vals = append(vals, strings.TrimSpace(v))
	}
	return AxisOverride{Name: name, Values: vals}, nil
}

// axisOverride returns the values given for axis name as a YAML list at
// the file's axis node (so that a mistake in them is reported there), or
// nil when none was given.
func (d *decoder) axisOverride(name string, at *yaml.Node) *yaml.Node {
	for _, o := range d.axisOverrides {
		if o.Name != name {
			continue
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: at.Line, Column: at.Column}
		for _, v := range o.Values {
			// Decoded as YAML would decode it in the file: 8 is an
			// integer, f16 a string.
			var doc yaml.Node
			e := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
			if yaml.Unmarshal([]byte(v), &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode {
				e = doc.Content[0]
			}
			e.Line, e.Column = at.Line, at.Column
			seq.Content = append(seq.Content, e)
		}
		return seq
	}
	return nil
}

// unknownOverrides reports an --axis that names no axis of the spec, at
// the axes: mapping.
func (d *decoder) unknownOverrides(n *yaml.Node, s *Spec) {
	var names []string
	for _, ax := range s.Axes {
		names = append(names, ax.Name)
	}
	for _, o := range d.axisOverrides {
		found := false
		for _, ax := range s.Axes {
			found = found || ax.Name == o.Name
		}
		if !found {
			d.errorf(n, "--axis %s: the spec has no axis %s (its axes: %s)", o.Name, o.Name, strings.Join(names, ", "))
		}
	}
}

// largestInt is the largest integer of a YAML list (0 for none): the file's
// own nkv axis, read past its mistakes (the file's checks report those
// when no --axis replaces it).
func largestInt(list *yaml.Node) int {
	n := 0
	for _, e := range deref(list).Content {
		var x int
		if deref(e).Decode(&x) == nil {
			n = max(n, x)
		}
	}
	return n
}
