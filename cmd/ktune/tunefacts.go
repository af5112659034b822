package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
	"github.com/ktune/ktune/search"
)

// compileFacts compiles the kernel of every point with NVRTC alone, as
// 'ktune check' does (through the sweep's own cache, so the sweep then
// loads what this built), and returns what each point's image says:
// whether it builds, its registers, local and shared memory. Each point
// is its own check set, named by its hash, so that a kernel's uses name
// the points that share it.
func compileFacts(arch string, points []*plan.Point, log io.Writer) (map[string]search.Facts, error) {
	sets := make([]probe.CheckSet, len(points))
	variant := map[string]string{}
	for i, p := range points {
		sets[i] = probe.CheckSet{Name: p.Hash, Points: []*plan.Point{p}}
		variant[p.Hash] = p.Config.Variant
	}
	rep, err := probe.Check(sets, probe.CheckOptions{Arch: arch, Log: log})
	if err != nil {
		return nil, fmt.Errorf("compiling the points for their compile facts: %w", err)
	}
	out := map[string]search.Facts{}
	for _, k := range rep.Kernels {
		if k.Status.Unchecked() || k.Status == probe.CheckSkipped {
			continue // nothing known: the point is timed as usual
		}
		f := search.Facts{Builds: k.Status == probe.CheckBuilt}
		for _, e := range k.Entries {
			if e.Known {
				// A kernel that failed a launch limit still built.
				f.Builds = true
				f.Resources = append(f.Resources, results.Resource{Kernel: e.Entry, Registers: e.Registers,
					LocalBytes: e.FrameBytes, StaticShared: e.StaticShared, DynamicShared: e.DynamicShared})
			}
		}
		for _, use := range k.Uses {
			// "HASH: variant (defines)"; a bitwise twin's kernel is used
			// under the twin's variant and is not the point's.
			hash, rest, ok := strings.Cut(use, ": ")
			v, _, _ := strings.Cut(rest, " (")
			if !ok || variant[hash] != v {
				continue
			}
			// A point builds when every kernel of its step does.
			have, seen := out[hash]
			have.Builds = f.Builds && (!seen || have.Builds)
			have.Resources = append(have.Resources, f.Resources...)
			out[hash] = have
		}
	}
	return out, nil
}
