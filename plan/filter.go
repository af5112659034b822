package plan

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A Filter selects points by an expression such as
// "variant=d2,SPLITS=32|64,nkv=32768": comma-separated terms that must all
// hold; each term is KEY=VALUE[|VALUE…]. Keys are variant, shape, nkv and
// any define.
type Filter struct {
	expr  string
	terms []filterTerm
}

type filterTerm struct {
	key    string
	values []string
}

// ParseFilter parses a filter expression.
func ParseFilter(expr string) (*Filter, error) {
	f := &Filter{expr: expr}
	for _, t := range strings.Split(expr, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("filter term %q: want KEY=VALUE (e.g. variant=d2,SPLITS=32)", t)
		}
		term := filterTerm{key: k}
		for _, alt := range strings.Split(v, "|") {
			term.values = append(term.values, strings.TrimSpace(alt))
		}
		f.terms = append(f.terms, term)
	}
	if len(f.terms) == 0 {
		return nil, fmt.Errorf("empty filter %q: want KEY=VALUE terms (e.g. variant=d2,SPLITS=32)", expr)
	}
	return f, nil
}

// filterValue returns p's value for a filter key.
func filterValue(p *Point, key string) (string, bool) {
	switch key {
	case "variant":
		return p.Config.Variant, true
	case "shape":
		return p.Config.Shape.Name, true
	case "nkv":
		return strconv.Itoa(p.Config.NKV), true
	}
	return p.Config.Define(key)
}

// Match reports whether p satisfies every term.
func (f *Filter) Match(p *Point) bool {
	for _, t := range f.terms {
		v, ok := filterValue(p, t.key)
		if !ok || !slices.Contains(t.values, v) {
			return false
		}
	}
	return true
}

// Check reports a key that no point has (a typo would otherwise select
// nothing, silently) and a filter that selects no point.
func (f *Filter) Check(points []*Point) error {
	for _, t := range f.terms {
		known := false
		for _, p := range points {
			if _, ok := filterValue(p, t.key); ok {
				known = true
				break
			}
		}
		if !known {
			return fmt.Errorf("filter %q: no point has a %q; keys are variant, shape, nkv and the defines (%s)",
				f.expr, t.key, strings.Join(DefineNames(points), ", "))
		}
	}
	if !slices.ContainsFunc(points, f.Match) {
		return fmt.Errorf("filter %q selects none of the %d points", f.expr, len(points))
	}
	return nil
}

// DefineNames returns the names of the defines the points set, sorted.
func DefineNames(points []*Point) []string {
	seen := map[string]bool{}
	var names []string
	for _, p := range points {
		for _, d := range p.Config.Defines {
			if !seen[d.Name] {
				seen[d.Name] = true
				names = append(names, d.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}
