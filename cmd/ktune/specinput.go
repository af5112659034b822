package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

// loadSpec reads the spec at path for plan, sweep, tune and gate. Every
// failure is the user's input (a mistake in the file, a path that is not a
// spec), so it exits 2; mistakes inside the file say file:line:col.
func loadSpec(path string, axes ...spec.AxisOverride) (*spec.Spec, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, usageErrorf("%s is a directory; a SPEC is a YAML file (e.g. experiments/slice.yaml)", path)
	}
	if data, err := os.ReadFile(path); err == nil && looksLikeResults(data) {
		return nil, usageErrorf("%s is a ktune results file (JSON lines), not a spec: give the YAML spec it was swept from; "+
			"results are read by report, compare, gate, export and tune --from", path)
	}
	s, err := spec.LoadWith(path, variants.Builtins(), axes)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return s, nil
}

// axisFlags is --axis NAME=V1,V2 (repeatable): an axis's values for this
// run in place of the spec's.
type axisFlags []spec.AxisOverride

func (a *axisFlags) String() string { return "" }

func (a *axisFlags) Set(arg string) error {
	o, err := spec.ParseAxisOverride(arg)
	if err != nil {
		return err
	}
	for _, have := range *a {
		if have.Name == o.Name {
			return fmt.Errorf("--axis %s given twice", o.Name)
		}
	}
	*a = append(*a, o)
	return nil
}

// register adds --axis to fs.
func (a *axisFlags) register(fs *flag.FlagSet) {
	fs.Var(a, "axis", "this run's values of a spec axis, `NAME=V1,V2` (repeatable): narrows or replaces the spec's (nkv=2048,8192); a point of the same values keeps its hash")
}

// looksLikeResults reports whether data starts with a results record: a
// JSON object with a schema version (internal/results). YAML would read
// such a file as a stream of flow mappings and blame a '---' separator.
func looksLikeResults(data []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimSpace(data), []byte("\n"))
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	var head struct {
		Schema *int `json:"schema"`
	}
	return json.Unmarshal(line, &head) == nil && head.Schema != nil
}

// planError classifies an error from building a plan out of a loaded
// spec: what fails there (an expression that divides by zero at some
// point, a kernel file that cannot be read) is the spec's mistake.
func planError(path string, err error) error {
	return withCode(exitUsage, fmt.Errorf("planning %s: %w", path, err))
}

// checkLaunches refuses a plan holding a point no CUDA device can launch
// (a block over 1024 threads, a grid past the limits), at the position of
// its variant in the spec: the geometry is known only once the plan has
// evaluated its expressions, and without this check the mistake would
// surface as "invalid configuration argument" on the GPU, after compiling.
func checkLaunches(s *spec.Spec, points []*plan.Point) error {
	var list spec.ErrorList
	seen := map[string]bool{}
	for _, pt := range points {
		c := &pt.Config
		err := spec.CheckLaunch("partial", c.Grid, c.Block)
		if err == nil && c.CombineGrid != ([3]int{}) { // a fused kernel has no combine
			err = spec.CheckLaunch("combine", c.CombineGrid, c.CombineBlock)
		}
		if err == nil || seen[c.Variant] {
			continue
		}
		seen[c.Variant] = true
		e := &spec.Error{File: s.Path, Msg: fmt.Sprintf("variant %s, shape %s, nkv %d: %v", c.Variant, c.Shape.Name, c.NKV, err)}
		if v := s.Variant(c.Variant); v != nil {
			e.Line, e.Col = v.Pos.Line, v.Pos.Col
		}
		list = append(list, e)
	}
	if len(list) > 0 {
		return withCode(exitUsage, list)
	}
	return nil
}
