package results

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A Filter selects configurations by an expression such as
// "variant=d2,SPLITS=32|64,nkv=32768": comma-separated terms that must all
// hold; each term is KEY=VALUE[|VALUE…]. Keys are variant, shape, nkv and
// any define. It is ktune's one filter syntax: sweep --only selects points
// with it, gate --only (and its --define shorthand) the candidate's
// configurations, report --only the records it renders.
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

// filterValue returns c's value for a filter key.
func filterValue(c *Config, key string) (string, bool) {
	switch key {
	case "variant":
		return c.Variant, true
	case "shape":
		return c.Shape.Name, true
	case "nkv":
		return strconv.Itoa(c.NKV), true
	}
	return c.Define(key)
}

// Match reports whether c satisfies every term. A nil Filter matches
// everything.
func (f *Filter) Match(c *Config) bool {
	if f == nil {
		return true
	}
	for _, t := range f.terms {
		v, ok := filterValue(c, t.key)
		if !ok || !slices.Contains(t.values, v) {
			return false
		}
	}
	return true
}

// Check reports a key that no configuration has (a typo would otherwise
// select nothing, silently) and a filter that selects none.
func (f *Filter) Check(configs []*Config) error {
	for _, t := range f.terms {
		known := false
		for _, c := range configs {
			if _, ok := filterValue(c, t.key); ok {
				known = true
				break
			}
		}
		if !known {
			return fmt.Errorf("filter %q: no configuration has a %q; keys are variant, shape, nkv and the defines (%s)",
				f.expr, t.key, strings.Join(DefineNames(configs), ", "))
		}
	}
	if !slices.ContainsFunc(configs, f.Match) {
		return fmt.Errorf("filter %q selects none of the %d configurations", f.expr, len(configs))
	}
	return nil
}

// DefineNames returns the names of the defines the configurations set,
// sorted.
func DefineNames(configs []*Config) []string {
	seen := map[string]bool{}
	var names []string
	for _, c := range configs {
		for _, d := range c.Defines {
			if !seen[d.Name] {
				seen[d.Name] = true
				names = append(names, d.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// String returns the filter's expression.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.expr
}

// And returns a filter that holds where both hold (either may be nil).
func (f *Filter) And(g *Filter) *Filter {
	switch {
	case f == nil:
		return g
	case g == nil:
		return f
	}
	return &Filter{expr: f.expr + "," + g.expr, terms: append(slices.Clone(f.terms), g.terms...)}
}

// DefinesFilter selects the configurations with the given define values
// (a spec's landed defines), nil when there are none.
func DefinesFilter(defs map[string]string) *Filter {
	if len(defs) == 0 {
		return nil
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	f := &Filter{}
	var parts []string
	for _, n := range names {
		f.terms = append(f.terms, filterTerm{key: n, values: []string{defs[n]}})
		parts = append(parts, n+"="+defs[n])
	}
	f.expr = strings.Join(parts, ",")
	return f
}
