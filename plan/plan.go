package plan

import (
	"fmt"
	"maps"
	"os"

	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/kernels"
)

// A Plan is a spec expanded into points, in the order they run.
type Plan struct {
	Spec    *spec.Spec
	Points  []*Point
	Skipped []Skip
	// Restricted counts, per restriction of the spec (restrict:, in file
	// order), the points it removed; a point two would remove counts
	// under the first.
	Restricted []int
	// Warnings are choices the plan accepts but that will not do what the
	// user probably wants (a grid that reads nkv, a bitwise kernel gated in
	// the tolerance class).
	Warnings []string
}

// Configs returns the configurations of the plan's points, in order.
func (p *Plan) Configs() []*results.Config {
	out := make([]*results.Config, len(p.Points))
	for i, pt := range p.Points {
		out[i] = &pt.Config
	}
	return out
}

// A Skip is a combination of a variant's defines and a shape that its
// kernel cannot run, with the kernel's reason. Skips are reported, not
// errors: a sweep space usually holds a few combinations that one kernel
// of several forbids.
type Skip struct {
	Variant string
	Shape   string
	Defines abi.Defines // sorted by name
	Reason  string
}

// compileFlags are the NVRTC options of a variant's points besides -D and
// -arch: -lineinfo so that profiles map SASS to source lines, --std=c++17
// for the kernels' constexpr functions (unless the variant names its own
// standard), then the variant's own flags. This is their one home: the
// probe passes them as they are.
func compileFlags(v *spec.Variant) []string {
	out := []string{"-lineinfo"}
	if !slices.ContainsFunc(v.Flags, func(f string) bool {
		return strings.HasPrefix(f, "--std=") || strings.HasPrefix(f, "-std=")
	}) {
		out = append(out, "--std=c++17")
	}
	return append(out, v.Flags...)
}

// Build expands a spec into its plan for the given GPU architecture
// (e.g. "sm_90"), reading built-in kernel sources from package kernels.
//
// Points come in a fixed order: shapes (file order) × variants (file order)
// × define combinations (the variant's axes in file order, the first
// varying slowest, values in file order) × nkv (ascending). A point of a
// dispatch variant is built from the arm that serves its nkv, as a variant
// of the arm's kernel under the dispatch's name (Config.Kernel names the
// arm); combinations that differ only in a define that arm does not take
// give one point, at its first place.
//
// Point.Hash is the first 16 hex digits of a SHA-256 over a canonical,
// length-prefixed encoding of everything that determines a record: the
// kernel source and every header offered to it, the entry points, the
// defines, the shape (capacity included) with its label and the variant's
// name (a record carries both, so a record found by hash has the labels
// the plan expects), nkv, the partial and combine geometry, the compile
// flags, the architecture, the gate settings (lengths, seed, tolerances),
// the numerics class with the twin's GateKey, the measure settings and the
// probes. Point.GateKey is the same without nkv, the measure settings and
// the probes: the gates of points that share it run once. The Landed mark
// is derived from the spec on every run and is not hashed.
func Build(s *spec.Spec, arch string) (*Plan, error) {
	return BuildFrom(s, arch, kernels.FS, Override{})
}

// BuildWith is Build with an Override of what the points measure.
func BuildWith(s *spec.Spec, arch string, over Override) (*Plan, error) {
	return BuildFrom(s, arch, kernels.FS, over)
}

// BuildFrom is Build reading built-in kernel sources and headers from files
// (a test passes its own).
func BuildFrom(s *spec.Spec, arch string, files fs.FS, over Override) (*Plan, error) {
	b := &builder{s: s, arch: arch, files: files, over: over, text: map[string]string{}, memo: map[string]*Point{}, arms: map[*spec.Arm]*spec.Variant{},
		builds: map[string]Source{}, versions: map[string]string{}}
	if err := b.loadHeaders(); err != nil {
		return nil, err
	}
	p := &Plan{Spec: s, Restricted: make([]int, len(s.Restrictions))}
	b.warn(p)
	warned := map[string]bool{} // the variants whose define collisions were looked for
	nkvs := s.NKVs()
	for i := range s.Shapes {
		sh := &s.Shapes[i]
		for j := range s.Variants {
			v := &s.Variants[j]
			if len(v.Dispatch) > 0 {
				if err := b.dispatch(p, v, sh); err != nil {
					return nil, err
				}
				continue
			}
			axes := s.DefineAxes(v)
			var err error
			spec.Combinations(axes, func(vals []string) bool {
				defs := sh.Defines(axes, vals)
				if reason := b.refuse(v, sh, defs); reason != "" {
					p.Skipped = append(p.Skipped, Skip{Variant: v.Name, Shape: sh.Name, Defines: sorted(defs, false), Reason: reason})
					return true
				}
				for _, nkv := range nkvs {
					var r int
					if r, err = b.restricted(sh, defs, nkv); err != nil {
						return false
					} else if r >= 0 {
						p.Restricted[r]++
						continue
					}
					var pt *Point
					if pt, err = b.point(v, sh, defs, nkv); err != nil {
						return false
					}
					if err = b.invariance(v, nil, sh, defs, nkv, pt, nil); err != nil {
						return false
					}
					pt.Index = len(p.Points)
					p.Points = append(p.Points, pt)
					if !warned[v.Name] {
						warned[v.Name] = true
						p.Warnings = append(p.Warnings, collisions(v, pt.Source, pt.Config.Defines)...)
					}
				}
				return true
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// pointID is a point's identity within one build: combinations that give
// the same one are one point.
func pointID(v *spec.Variant, sh *spec.Shape, defines abi.Defines, nkv int) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d", v.Name, v.Kernel, sh.Name, defines.String(), nkv)
}

// dispatch appends the points of a dispatch variant at one shape: each
// combination of its axes at each nkv, built from the arm that serves the
// nkv. The gates of a point run its arm's kernel alone, at the arm's own
// gate lengths, some beyond the threshold: an arm must be correct
// everywhere, and its replay gate stays within one static grid.
func (b *builder) dispatch(p *Plan, v *spec.Variant, sh *spec.Shape) error {
	axes := b.s.DefineAxes(v)
	skipped := map[string]bool{}
	var err error
	spec.Combinations(axes, func(vals []string) bool {
		combo := sh.Defines(axes, vals)
		for _, nkv := range b.s.NKVs() {
			a := v.Arm(nkv)
			av := b.armVariant(v, a)
			defs := sh.ArmDefines(a, axes, vals)
			if reason := b.refuse(av, sh, defs); reason != "" {
				ds := sorted(defs, false)
				if key := a.Kernel + "\x00" + ds.String(); !skipped[key] {
					skipped[key] = true
					i := 0
					for &v.Dispatch[i] != a {
						i++
					}
					p.Skipped = append(p.Skipped, Skip{Variant: v.Name, Shape: sh.Name, Defines: ds,
						Reason: fmt.Sprintf("arm %s (%s): %s", a.Kernel, v.ArmRange(i), reason)})
				}
				continue
			}
			var r int
			if r, err = b.restricted(sh, defs, nkv); err != nil {
				return false
			} else if r >= 0 {
				if id := "restricted\x00" + pointID(av, sh, sorted(defs, true), nkv); !skipped[id] {
					skipped[id] = true
					p.Restricted[r]++
				}
				continue
			}
			var pt *Point
			if pt, err = b.point(av, sh, defs, nkv); err != nil {
				return false
			}
			if err = b.invariance(av, v, sh, defs, nkv, pt, func(o *spec.Arm) map[string]string { return sh.ArmDefines(o, axes, vals) }); err != nil {
				return false
			}
			// Combinations that differ only in a define this arm does not
			// take build the same point: it runs once.
			landed := b.landed(v, combo)
			if pt.Index >= 0 {
				pt.Landed = pt.Landed || landed
				continue
			}
			pt.Index, pt.Landed = len(p.Points), landed
			p.Points = append(p.Points, pt)
		}
		return true
	})
	return err
}

// armVariant is the single-kernel variant the builder compiles for one
// arm of a dispatch variant: the variant's name (records group by it) with
// the arm's kernel, the arm's position for messages and no overrides.
func (b *builder) armVariant(v *spec.Variant, a *spec.Arm) *spec.Variant {
	if av, ok := b.arms[a]; ok {
		return av
	}
	av := &spec.Variant{Name: v.Name, KernelRef: a.KernelRef, PDL: v.PDL, Pos: a.Pos}
	b.arms[a] = av
	return av
}

type builder struct {
	s     *spec.Spec
	over  Override
	arch  string
	files fs.FS
	// headers is every *.cuh of files; a point's Source carries those its
	// kernel includes.
	headers map[string]string
	text    map[string]string // kernel source by file
	memo    map[string]*Point // by identity, so a twin is built once
	arms    map[*spec.Arm]*spec.Variant
	// builds are the engine builds run or found, by expanded command;
	// versions the compilers' --version output, by path (build.go).
	builds   map[string]Source
	versions map[string]string
}

func (b *builder) loadHeaders() error {
	names, err := fs.Glob(b.files, "*.cuh")
	if err != nil {
		return fmt.Errorf("listing kernel headers: %w", err)
	}
	b.headers = make(map[string]string, len(names))
	for _, n := range names {
		data, err := fs.ReadFile(b.files, n)
		if err != nil {
			return fmt.Errorf("reading kernel header %s: %w", n, err)
		}
		b.headers[n] = string(data)
	}
	return nil
}

func (b *builder) warn(p *Plan) {
	for _, w := range b.s.Warnings {
		p.Warnings = append(p.Warnings, w.Error())
	}
	for _, v := range b.s.Variants {
		var reads []string
		exprs := append(append(append([]string{}, v.Grid...), v.Block...), v.Shared)
		for _, l := range v.Launches {
			exprs = append(append(append(exprs, l.Grid...), l.Block...), l.Shared)
		}
		for _, e := range exprs {
			if x, err := expr.Parse(e); err == nil && contains(x.Symbols(), spec.NKV) {
				reads = append(reads, e)
			}
		}
		switch {
		case len(reads) > 0 && v.NeverCaptured:
			p.Warnings = append(p.Warnings, fmt.Sprintf("variant %s: geometry reads nkv (%s), launched eagerly (graph: never): its points get no replay gate and no graph probe",
				v.Name, strings.Join(reads, ", ")))
		case len(reads) > 0:
			p.Warnings = append(p.Warnings, fmt.Sprintf("variant %s: geometry reads nkv (%s): a captured CUDA graph cannot replay it, so its replay gate will fail",
				v.Name, strings.Join(reads, ", ")))
		}
		for i := range v.Dispatch {
			lo, hi := v.ArmBounds(i)
			if !slices.ContainsFunc(b.s.NKVs(), func(n int) bool { return n >= lo && n < hi }) {
				p.Warnings = append(p.Warnings, fmt.Sprintf("variant %s: arm %s (%s) has no point: no nkv of the axes falls in its range",
					v.Name, v.Dispatch[i].Kernel, v.ArmRange(i)))
			}
		}
		if v.Artifact != "" {
			if _, err := os.Stat(v.Path); err != nil {
				p.Warnings = append(p.Warnings, fmt.Sprintf("variant %s: prebuilt %s %s does not exist yet: its points fail until it is built", v.Name, v.Artifact, v.Path))
			}
		}
		for _, f := range missingFiles(&v) {
			p.Warnings = append(p.Warnings, fmt.Sprintf("variant %s: launch file %s does not exist yet: its points fail until it is built", v.Name, f))
		}
		if k := v.Builtin; k != nil && k.Twin != "" && v.BitwiseWith == "" && b.runsKernel(k.Twin) {
			p.Warnings = append(p.Warnings, fmt.Sprintf("variant %s: kernel %s is byte-identical to %s by design, but the spec gates it in the tolerance class (add bitwise_with)",
				v.Name, k.Name, k.Twin))
		}
	}
}

// runsKernel reports whether a variant of the spec runs the built-in
// kernel named kernel: a bitwise twin worth naming is one the spec has.
func (b *builder) runsKernel(kernel string) bool {
	return slices.ContainsFunc(b.s.Variants, func(u spec.Variant) bool {
		return u.Builtin != nil && u.Builtin.Name == kernel
	})
}

// refuse returns why the variant's kernel (or its bitwise twin) cannot run
// the combination, or "" when it can.
func (b *builder) refuse(v *spec.Variant, sh *spec.Shape, defs map[string]string) string {
	if v.Builtin != nil {
		if err := v.Builtin.Accepts(sh.Shape, defs); err != nil {
			return err.Error()
		}
	}
	if v.BitwiseWith == "" {
		return ""
	}
	tv, tdefs := b.twinDefines(v, sh, defs)
	if reason := b.refuse(tv, sh, tdefs); reason != "" {
		return fmt.Sprintf("bitwise twin %s (%s) cannot run: %s", tv.Name, sorted(tdefs, false).String(), reason)
	}
	return ""
}

// twinDefines resolves the defines of v's bitwise twin at a combination:
// each define the twin takes keeps the candidate's value when the
// candidate has that define (SPLITS always), else the twin's first value.
// The twin need not be a point of the plan.
func (b *builder) twinDefines(v *spec.Variant, sh *spec.Shape, defs map[string]string) (*spec.Variant, map[string]string) {
	tv := b.s.Variant(v.BitwiseWith)
	axes := b.s.DefineAxes(tv)
	vals := make([]string, len(axes))
	for i, ax := range axes {
		vals[i] = ax.Values[0]
		if val, ok := defs[ax.Name]; ok {
			vals[i] = val
		}
	}
	return tv, sh.Defines(axes, vals)
}

// point builds (or finds) the point of variant v at one shape, define
// combination and nkv, with its twin.
func (b *builder) point(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int) (*Point, error) {
	if v.PDL {
		// The kernels call griddepcontrol only when built for it.
		defs = maps.Clone(defs)
		defs[DefinePDL] = "1"
	}
	// So do the kernels that assert their cluster.
	clusters, cluster, err := b.clusters(v, sh, defs, nkv)
	if err != nil {
		return nil, err
	}
	defs = withCluster(defs, cluster)
	defines := sorted(defs, true)
	id := pointID(v, sh, defines, nkv)
	if pt, ok := b.memo[id]; ok {
		return pt, nil
	}
	src, err := b.source(v)
	if err != nil {
		return nil, err
	}
	splits, _ := strconv.Atoi(defs[spec.Splits])
	shape := sh.Shape
	shape.Attention.LSE = v.LSE // the kernel's output, the oracle's too
	cfg := results.Config{
		Spec: b.s.Name, Variant: v.Name, Kernel: v.Kernel, Defines: defines,
		Shape: shape, NKV: nkv, Splits: splits,
		CombineGrid:  [3]int{sh.Heads, sh.Batch, 1},
		CombineBlock: [3]int{sh.HeadDim, 1, 1},
		BitwiseWith:  v.BitwiseWith,
		Fixture:      b.fixture(),
	}
	geo, launches, wsBytes, err := b.geometry(v, sh, defs, nkv, &cfg)
	if err != nil {
		return nil, err
	}
	if err := b.seal(v, sh, defs, nkv, &src, launches); err != nil {
		return nil, err
	}
	layouts, err := b.layoutChecks(v)
	if err != nil {
		return nil, err
	}
	if v.Build != nil {
		if err := b.built(v, sh, defs, nkv, &src, launches, layouts); err != nil {
			return nil, err
		}
	}
	if err := b.resolveSymbols(v, &src, launches); err != nil {
		return nil, err
	}
	sms, err := b.pointSMs(v)
	if err != nil {
		return nil, b.pointErrorf(v, sh, defs, nkv, "%w", err)
	}
	scratch, err := b.scratch(v, sh, defs, nkv, sms)
	if err != nil {
		return nil, err
	}
	pageSize, err := b.pageSize(v, sh, defs, nkv)
	if err != nil {
		return nil, err
	}
	g, m := b.s.Gates, b.s.Measure
	pt := &Point{
		Index: -1, Config: cfg, Source: src, Flags: compileFlags(v), IO: pointIO(v, defs), PageSize: pageSize,
		GateNKV: optionGateNKV(gateNKV(g.NKV, splits, sh.Capacity), shape, splits, pageSize), Seed: g.Seed,
		NeverCaptured: v.NeverCaptured, Budget: v.Budget,
		Tol: Tolerance(g.For(sh.KVDtype)), Waivers: waivers(&g), Stale: staleWaiver(&g),
		Measure: Measure{Warmup: m.Warmup, MinSamples: m.MinSamples, MaxSamples: m.MaxSamples, MaxNoise: m.MaxNoise,
			BudgetSec: m.BudgetSec, HotBatch: m.HotBatch, TimeoutSec: m.TimeoutSec},
		Landed:   b.landed(v, defs),
		Geometry: geo,
		Launches: launches, WorkspaceBytes: wsBytes, Scratch: scratch, Layouts: layouts, SMs: sms,
	}
	if v.PDL {
		for i := 1; i < len(pt.Launches); i++ {
			pt.Launches[i].Programmatic = true
		}
	}
	for i := range pt.Launches {
		pt.Launches[i].Cluster = clusters[i]
	}
	for _, name := range b.s.Probes {
		p, err := measure.ParseProbe(name)
		if err != nil {
			return nil, fmt.Errorf("probes: %w", err)
		}
		pt.Probes = append(pt.Probes, p)
	}
	if v.BitwiseWith != "" {
		tv, tdefs := b.twinDefines(v, sh, defs)
		if pt.Twin, err = b.point(tv, sh, tdefs, nkv); err != nil {
			return nil, err
		}
		// Twins run in one workspace and compare bytes: the same buffers
		// in the same dtypes and layouts, or the comparison means nothing.
		if pt.Twin.IO != pt.IO {
			return nil, fmt.Errorf("%s:%d:%d: variant %s: bitwise_with %s, whose io differs (%+v against %+v): byte identity needs the same dtypes and layouts",
				b.s.Path, v.Pos.Line, v.Pos.Col, v.Name, tv.Name, pt.IO, pt.Twin.IO)
		}
	}
	pt.CaptureNKV, pt.ReplayNKV = replayNKV(pt.GateNKV, splits, sh.Capacity)
	if err := b.clusterFits(v, sh, defs, pt); err != nil {
		return nil, err
	}
	if err := b.tensorMaps(pt); err != nil {
		return nil, err
	}
	if err := b.planned(v, pt); err != nil {
		return nil, err
	}
	if err := b.runnable(v, sh, defs, pt); err != nil {
		return nil, err
	}
	b.over.apply(pt)
	pt.arch = b.arch
	pt.GateKey, pt.Hash = b.keys(pt)
	b.memo[id] = pt
	return pt, nil
}

func (b *builder) landed(v *spec.Variant, defs map[string]string) bool {
	l := b.s.Landed
	if l.Variant != v.Name {
		return false
	}
	for name, val := range l.Defines {
		if defs[name] != val {
			return false
		}
	}
	return true
}

// sorted returns the defines sorted by name, without the shape-derived
// ones unless all is set (the shape already says them).
func sorted(defs map[string]string, all bool) abi.Defines {
	ds := abi.SortDefines(defs)
	if all {
		return ds
	}
	return ds.Own()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fixture reports whether the spec is a fault-isolation spec: one of its
// variants' kernels lives under testdata (results.FixtureKernel), so every
// point of it is a fixture (results.Config.Fixture).
func (b *builder) fixture() bool {
	for i := range b.s.Variants {
		if results.FixtureKernel(b.s.Variants[i].Kernel) {
			return true
		}
	}
	return false
}
