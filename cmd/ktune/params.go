package main

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
)

// launchWhere places a point's launch in spec s as file:line:col: the
// launch entry's own position, or the variant's for a variant that runs
// the ABI's signature (its launches are the ABI's).
func launchWhere(s *spec.Spec) func(p *plan.Point, li int) string {
	return func(p *plan.Point, li int) string {
		v := s.Variant(p.Config.Variant)
		if v == nil {
			return fmt.Sprintf("%s: variant %s, launch %d", s.Path, p.Config.Variant, li)
		}
		pos := v.Pos
		if li < len(v.Launches) {
			pos = v.Launches[li].Pos
		}
		return fmt.Sprintf("%s:%d:%d: variant %s, launch %d", s.Path, pos.Line, pos.Col, v.Name, li)
	}
}

// checkPrebuiltParams refuses a plan whose launches do not match the
// parameters a prebuilt CUBIN records, or name an entry it lacks
// (probe.CheckPrebuilt): known without a compiler or a GPU, so plan says
// it, with ktune check's exit status.
func checkPrebuiltParams(s *spec.Spec, points []*plan.Point) error {
	problems := probe.CheckPrebuilt([]probe.CheckSet{{Name: s.Name, Points: points, Where: launchWhere(s)}})
	if len(problems) == 0 {
		return nil
	}
	return withCode(exitBuild, fmt.Errorf("the launches do not match the prebuilt kernel:\n  %s", strings.Join(problems, "\n  ")))
}
