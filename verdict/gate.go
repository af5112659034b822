// Package verdict decides whether a candidate kernel may land: from the
// evidence of results files (internal/evidence), it judges the candidate's
// numerics class and compares it with the baseline point by point, and
// says what the verdict rests on. Its rows, comparisons and winners are
// package decision's, which the report's tables share; it does not read
// the report.
package verdict

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
	"github.com/ktune/ktune/internal/workload"
)

// A Verdict is the outcome of a landing gate.
type Verdict string

const (
	// VerdictPass: the candidate passes its numerics class everywhere and
	// is nowhere significantly slower than the baseline beyond the threshold.
	VerdictPass Verdict = "pass"
	// VerdictNumerics: a configuration of the candidate failed a gate,
	// faulted, or lacks the evidence its numerics class requires.
	VerdictNumerics Verdict = "numerics"
	// VerdictRegression: significantly slower than the baseline by more
	// than the threshold at some point.
	VerdictRegression Verdict = "regression"
	// VerdictIncomplete: points are missing on one side, or a point ended
	// in an error that says nothing about the candidate (compile, OOM…).
	VerdictIncomplete Verdict = "incomplete"
	// VerdictUndecided: nothing failed, but the evidence cannot support a
	// pass: at some point the samples are too few for the test to reach
	// α, or the confidence interval of the change still allows a slowdown
	// beyond the threshold, or input records could not be read. More
	// samples (GateResult.SamplesPerSide) or intact input decide it.
	VerdictUndecided Verdict = "undecided"
)

// GateOptions says what to gate against what.
type GateOptions struct {
	Candidate string // variant name
	// Only restricts the candidate to the configurations it selects (e.g.
	// SPLITS=64), in ktune's one filter syntax: how to gate one
	// configuration of a swept candidate. Nil: every configuration takes
	// part and at each point the fastest one is compared.
	Only *results.Filter
	// Against is the baseline variant; empty means the landed records.
	Against string
	// AgainstOnly restricts the baseline the same way.
	AgainstOnly *results.Filter
	// Threshold is the tolerated slowdown (0.02 = 2%) of a significant
	// difference.
	Threshold float64
	// Probes limits the performance check; empty means every probe both
	// sides measured.
	Probes []results.Probe
	// Skipped lists the input lines that could not be read as records
	// (results.Set.Warnings). A skipped line may be the very record that
	// would fail the candidate, so any makes the verdict at best
	// undecided, unless AllowDamaged.
	Skipped []error
	// AllowDamaged lets the gate pass over skipped lines and excluded
	// records; they are still counted in the result.
	AllowDamaged bool
	// Excluded lists the records read that are not evidence
	// (evidence.Set.Excluded): like a skipped line, any makes the verdict
	// at best undecided, unless AllowDamaged.
	Excluded []evidence.Exclusion
	// Failures lists every record of the input that says its kernel is
	// wrong (evidence.Set.Failures), superseded and excluded ones
	// included: a candidate configuration with one fails numerics, whatever
	// a later or another file's record of it says.
	Failures []evidence.Failure
	// SameDevice makes a point whose two sides ran on machines that differ
	// (evidence.EnvDiff) undecided; without it the difference is a warning.
	SameDevice bool
	// Expected lists the points a plan asks for (the SPEC form): each one
	// without a record of its configuration is missing.
	Expected []results.Config
	// Workload, when set, decides performance by the change weighted by
	// its buckets (checkWorkload) instead of point by point; a bucket that
	// regresses fails the gate when the regressed buckets carry more than
	// MaxRegressedWeight of the steps.
	Workload           *workload.Workload
	MaxRegressedWeight float64
}

// A GateResult is the verdict with a row per point and per configuration.
type GateResult struct {
	Verdict   Verdict     `json:"verdict"`
	Candidate string      `json:"candidate"`
	Baseline  string      `json:"baseline"`
	Threshold float64     `json:"threshold"`
	Alpha     float64     `json:"alpha"`
	Numerics  []NumRow    `json:"numerics"`
	Points    []GatePoint `json:"points"`
	Missing   []string    `json:"missing,omitempty"`
	// SkippedRecords counts the input lines that could not be read as
	// records; Skipped says where and why (file:line: message).
	SkippedRecords int      `json:"skipped_records"`
	Skipped        []string `json:"skipped,omitempty"`
	// AllowDamaged is set when skipped lines or excluded records were
	// allowed not to block a pass (--allow-damaged).
	AllowDamaged bool `json:"allow_damaged,omitempty"`
	// ExcludedRecords counts the records read that are not evidence (no
	// or impossible samples, a status its gates contradict…); Excluded
	// says which and why.
	ExcludedRecords int      `json:"excluded_records"`
	Excluded        []string `json:"excluded,omitempty"`
	// EnvWarnings lists the compared points whose sides ran on machines
	// that differ (GPU, driver, NVRTC or clocks); with SameDevice each
	// makes its point undecided.
	EnvWarnings []string `json:"env_warnings,omitempty"`
	// SameDevice is set when machine differences decide (--same-device).
	SameDevice bool `json:"same_device,omitempty"`
	// Undecided counts the point rows whose samples cannot decide, and
	// SamplesPerSide estimates how many samples per side would decide
	// them all (0 when none is undecided).
	Undecided      int `json:"undecided"`
	SamplesPerSide int `json:"samples_per_side,omitempty"`
	// Counts sums up the point rows: faster, slower, within noise,
	// undecided.
	Counts Counts `json:"counts"`
	// Workload is the judgement under --workload, nil without one.
	Workload *WorkloadResult `json:"workload,omitempty"`
}

// A NumRow is the numerics verdict of one candidate configuration (its
// gates run once per configuration and shape, not per nkv).
type NumRow struct {
	Device string `json:"device"`
	Shape  string `json:"shape"`
	Config string `json:"config"`
	Pass   bool   `json:"pass"`
	// Error is set instead of Pass when the points ended without saying
	// anything about numerics (compile failure, OOM, timeout).
	Error  bool   `json:"error,omitempty"`
	Reason string `json:"reason"`
	// Waivers are the configuration's records' waivers (Record.Waivers:
	// a loosened or skipped input set, a gate not run): a pass holds
	// under them, and Reason says so.
	Waivers []string `json:"waivers,omitempty"`
}

// A GatePoint is one probe at one point.
type GatePoint struct {
	Device    string        `json:"device"`
	Shape     string        `json:"shape"`
	NKV       int           `json:"nkv"`
	Probe     results.Probe `json:"probe"`
	Candidate string        `json:"candidate"`
	Baseline  string        `json:"baseline"`
	CandNS    float64       `json:"candidate_median_ns"`
	BaseNS    float64       `json:"baseline_median_ns"`
	// DeltaPct is the Hodges-Lehmann estimate of candidate/baseline − 1
	// in percent (decision.Change.DeltaPct): the centre of the interval
	// WorstPct bounds, not the ratio of the two medians printed beside it.
	DeltaPct   float64 `json:"delta_pct"`
	P          float64 `json:"p"`
	N1         int     `json:"n_candidate"`
	N2         int     `json:"n_baseline"`
	Regression bool    `json:"regression"`
	// Undecided is set when the samples cannot tell a pass from a
	// regression here (see VerdictUndecided); NeedSamples then estimates
	// the samples per side that would.
	Undecided   bool `json:"undecided,omitempty"`
	NeedSamples int  `json:"need_samples,omitempty"`
	// WorstPct is the upper bound of the change's 95% interval in percent
	// (null when a side has too few samples for an interval).
	WorstPct *float64 `json:"worst_pct"`
	Reason   string   `json:"reason"`

	side *sidePoint // the samples compared, for a workload
}

// Gate decides whether opts.Candidate may replace the baseline. An error
// means the inputs cannot be gated at all (no candidate or no baseline).
//
// At each point (device, shape, nkv) the candidate's fastest configuration
// that passed numerics is compared with the baseline's fastest, both by
// the median of the first gated probe: SPLITS is a dispatch choice made
// per context length, so a candidate is judged by what it would ship
// there. Use Defines to gate one configuration instead.
func Gate(recs []results.Record, opts GateOptions) (*GateResult, error) {
	if opts.Candidate == "" {
		return nil, errors.New("gating: no candidate variant named")
	}
	res := &GateResult{Candidate: opts.Candidate, Baseline: "landed", Threshold: opts.Threshold, Alpha: decision.Alpha,
		SkippedRecords: len(opts.Skipped), ExcludedRecords: len(opts.Excluded),
		AllowDamaged: opts.AllowDamaged && len(opts.Skipped)+len(opts.Excluded) > 0, SameDevice: opts.SameDevice}
	for _, e := range opts.Skipped {
		res.Skipped = append(res.Skipped, e.Error())
	}
	for _, e := range opts.Excluded {
		res.Excluded = append(res.Excluded, e.String())
	}
	if opts.Against != "" {
		res.Baseline = opts.Against
	}
	if opts.Only != nil {
		res.Candidate += " " + strings.ReplaceAll(opts.Only.String(), ",", " ")
	}
	if opts.AgainstOnly != nil {
		res.Baseline += " " + strings.ReplaceAll(opts.AgainstOnly.String(), ",", " ")
	}
	var cand, base []row
	rows, err := points(recs)
	if err != nil {
		return nil, fmt.Errorf("gating: %w", err)
	}
	for _, r := range rows {
		if r.variant() == opts.Candidate && opts.Only.Match(r.cfg()) {
			cand = append(cand, r)
		}
		isBase := r.Rec.Landed
		if opts.Against != "" {
			isBase = r.variant() == opts.Against
		}
		if isBase && opts.AgainstOnly.Match(r.cfg()) {
			base = append(base, r)
		}
	}
	if len(cand) == 0 {
		return nil, fmt.Errorf("gating: no records of candidate %s%s", res.Candidate, variantsHint(rows))
	}
	if len(base) == 0 {
		return nil, fmt.Errorf("gating: no records of the baseline (%s)", res.Baseline)
	}
	if opts.Against == opts.Candidate && opts.Candidate != "" {
		return nil, fmt.Errorf("gating: candidate and baseline are both %s", opts.Candidate)
	}

	passed := res.checkNumerics(cand, opts.Failures)
	res.checkPerformance(cand, base, passed, opts)
	res.checkExpected(rows, opts)
	res.Counts = countPoints(res.Points)
	// Without a workload every point decides alike; with one, the
	// weighted change and the regressed buckets' share do.
	regressed, undecided := anyPoint(res.Points), res.Undecided > 0
	if opts.Workload != nil {
		res.checkWorkload(opts)
		regressed, undecided = res.Workload.regression(), res.Workload.undecided()
	}

	switch {
	case anyNum(res.Numerics, func(n NumRow) bool { return !n.Pass && !n.Error }):
		res.Verdict = VerdictNumerics
	case regressed:
		res.Verdict = VerdictRegression
	case len(res.Missing) > 0 || anyNum(res.Numerics, func(n NumRow) bool { return n.Error }):
		res.Verdict = VerdictIncomplete
	case undecided || (opts.SameDevice && len(res.EnvWarnings) > 0) ||
		(res.SkippedRecords+res.ExcludedRecords > 0 && !opts.AllowDamaged):
		res.Verdict = VerdictUndecided
	default:
		res.Verdict = VerdictPass
	}
	return res, nil
}

func anyNum(rows []NumRow, f func(NumRow) bool) bool {
	for _, r := range rows {
		if f(r) {
			return true
		}
	}
	return false
}

func anyPoint(ps []GatePoint) bool {
	for _, p := range ps {
		if p.Regression {
			return true
		}
	}
	return false
}

// checkNumerics judges each candidate configuration over all its records
// and returns the configurations that passed. The gates run once per
// compiled configuration, so the evidence may sit on any of its records;
// what the class requires must appear on at least one and no gate may
// fail on any.
func (res *GateResult) checkNumerics(cand []row, failures []evidence.Failure) map[decision.ConfigKey]bool {
	type acc struct {
		row      *row
		kinds    map[results.GateKind]bool
		waivers  []string
		fail     string
		errText  string
		statuses []string
	}
	var order []decision.ConfigKey
	accs := map[decision.ConfigKey]*acc{}
	for i := range cand {
		r := &cand[i]
		a := accs[r.Key.ConfigKey]
		if a == nil {
			a = &acc{row: r, kinds: map[results.GateKind]bool{}}
			accs[r.Key.ConfigKey] = a
			order = append(order, r.Key.ConfigKey)
		}
		for _, w := range r.Rec.Waivers {
			if !slices.Contains(a.waivers, w) {
				a.waivers = append(a.waivers, w)
			}
		}
		for j := range r.Rec.Gates {
			g := &r.Rec.Gates[j]
			a.kinds[g.Kind] = true
			if !g.Pass && a.fail == "" {
				a.fail = fmt.Sprintf("%s gate failed at nkv=%d: %s", g.Kind, g.NKV, decision.GateEvidence(g))
			}
		}
		switch r.Rec.Status {
		case results.StatusOK, results.StatusGateFailed:
		case results.StatusFault:
			// A kernel that faults is wrong, whatever its gates said before.
			if a.fail == "" {
				a.fail = fmt.Sprintf("fault at nkv=%d: %s", r.nkv(), decision.OneLine(r.Rec.Error))
			}
		default:
			if a.errText == "" {
				a.errText = fmt.Sprintf("%s at nkv=%d: %s", r.Rec.Status, r.nkv(), dash(decision.OneLine(r.Rec.Error)))
			}
		}
	}
	// A failure anywhere in the input, by the candidate's hash or its
	// configuration, outweighs whatever record its row kept.
	byHash := map[string]decision.ConfigKey{}
	for i := range cand {
		byHash[cand[i].Rec.Hash] = cand[i].Key.ConfigKey
	}
	for i := range failures {
		f := &failures[i]
		k, ok := byHash[f.Hash]
		if !ok {
			k = decision.KeyFor(f.Device, &f.Config).ConfigKey
		}
		if a := accs[k]; a != nil && a.fail == "" {
			a.fail = f.Reason + " (record " + f.Hash + ")"
		}
	}
	passed := map[decision.ConfigKey]bool{}
	for _, k := range order {
		a := accs[k]
		n := NumRow{Device: a.row.Key.Device, Shape: a.row.Label, Config: decision.ConfigLabel(a.row.cfg()), Waivers: a.waivers}
		twin := a.row.cfg().BitwiseWith
		switch {
		case a.fail != "":
			n.Reason = a.fail
		case a.errText != "":
			// A point that ended in an error (compile, OOM, a sanitizer
			// run that decided nothing) has no gates to show: the row is
			// incomplete, not a numerics failure it never had.
			n.Error, n.Reason = true, a.errText
		case twin != "" && !a.kinds[results.GateBitwise]:
			n.Reason = "declared byte-identical to " + twin + " but no bitwise gate was recorded"
		case twin == "" && !a.kinds[results.GateTolerance]:
			n.Reason = "tolerance class but no tolerance gate was recorded"
		default:
			n.Pass = true
			n.Reason = "gates passed: " + strings.Join(sortedKeys(a.kinds), ", ")
			if twin != "" {
				n.Reason += " (byte-identical to " + twin + ")"
			}
			if len(a.waivers) > 0 {
				n.Reason += "; under the spec's waivers: " + strings.Join(a.waivers, "; ")
			}
			passed[k] = true
		}
		res.Numerics = append(res.Numerics, n)
	}
	return passed
}

func sortedKeys(m map[results.GateKind]bool) []string {
	var out []string
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

type gatePointKey struct {
	Device, Shape string
	NKV           int
}

// checkPerformance compares, at every point, the candidate's fastest
// passing configuration with the baseline's fastest.
func (res *GateResult) checkPerformance(cand, base []row, passed map[decision.ConfigKey]bool, opts GateOptions) {
	probes := opts.Probes
	if len(probes) == 0 {
		probes = measure.Probes
	}
	// Each side's fastest at a point (decision.Fastest), by the first
	// probe it measured of those gated.
	pick := func(rows []row, ok func(*row) bool) (map[gatePointKey]*row, []gatePointKey) {
		at := map[gatePointKey][]*row{}
		var keys []gatePointKey
		for i := range rows {
			r := &rows[i]
			if r.Rec.Status != results.StatusOK || !ok(r) || firstProbe(r, probes) == nil {
				continue
			}
			k := r.at()
			if at[k] == nil {
				keys = append(keys, k)
			}
			at[k] = append(at[k], r)
		}
		best := map[gatePointKey]*row{}
		for k, rs := range at {
			best[k] = rs[decision.Fastest(len(rs), func(int) bool { return true },
				func(i int) float64 { return firstProbe(rs[i], probes).Summary.Median })]
		}
		return best, keys
	}
	cb, ckeys := pick(cand, func(r *row) bool { return passed[r.Key.ConfigKey] })
	bb, bkeys := pick(base, func(*row) bool { return true })
	// Points where the candidate failed numerics are already judged; they
	// are not "missing".
	failedAt := map[gatePointKey]bool{}
	for i := range cand {
		r := &cand[i]
		if !passed[r.Key.ConfigKey] {
			failedAt[r.at()] = true
		}
	}
	for _, k := range bkeys {
		if _, ok := cb[k]; !ok && !failedAt[k] {
			res.Missing = append(res.Missing, fmt.Sprintf("%s nkv=%d: no measured candidate record", shapeName(bb[k]), k.NKV))
		}
	}
	for _, k := range ckeys {
		if _, ok := bb[k]; !ok {
			res.Missing = append(res.Missing, fmt.Sprintf("%s nkv=%d: no measured baseline record", shapeName(cb[k]), k.NKV))
		}
	}
	res.checkCoverage(cand, bkeys, bb, cb)
	sort.Slice(ckeys, func(i, j int) bool {
		a, b := ckeys[i], ckeys[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		if a.Shape != b.Shape {
			return a.Shape < b.Shape
		}
		return a.NKV < b.NKV
	})
	for _, k := range ckeys {
		c, b := cb[k], bb[k]
		if b == nil {
			continue
		}
		if d := evidence.EnvDiff(&c.Rec.Env, &b.Rec.Env); d != "" {
			res.EnvWarnings = append(res.EnvWarnings, fmt.Sprintf("%s nkv=%d: %s", c.Label, k.NKV, d))
		}
		for _, p := range probes {
			cs, bs := c.probe(p), b.probe(p)
			// Both sides answer for every probe either measured (or
			// every probe asked for): a probe left out on one side is
			// the one that might regress.
			hasC, hasB := cs != nil && len(cs.SamplesNS) > 0, bs != nil && len(bs.SamplesNS) > 0
			if !hasC && !hasB && len(opts.Probes) == 0 {
				continue
			}
			if !hasC || !hasB {
				side, cfg := "candidate", decision.ConfigLabel(c.cfg())
				if hasC {
					side, cfg = "baseline", decision.ConfigLabel(b.cfg())
				}
				res.Missing = append(res.Missing, fmt.Sprintf("%s nkv=%d: %s %s not measured on probe %s", c.Label, k.NKV, side, cfg, p))
				continue
			}
			row := decision.Compare(bs.SamplesNS, cs.SamplesNS)
			gp := GatePoint{
				Device: k.Device, Shape: c.Label, NKV: k.NKV, Probe: p,
				Candidate: decision.ConfigLabel(c.cfg()), Baseline: decision.ConfigLabel(b.cfg()),
				CandNS: row.New.Center, BaseNS: row.Old.Center, DeltaPct: row.DeltaPct,
				P: row.P, N1: row.N2, N2: row.N1,
				side: &sidePoint{model: modelOf(c.cfg().Shape), name: c.Label, batch: c.cfg().Shape.Batch, cand: cs.SamplesNS, base: bs.SamplesNS},
			}
			if !math.IsInf(row.RatioHi, 0) {
				w := row.RatioHi * 100
				gp.WorstPct = &w
			}
			thr := opts.Threshold * 100
			switch {
			case row.Significant && row.DeltaPct > thr:
				gp.Regression = true
				gp.Reason = fmt.Sprintf("REGRESSION: slower by %.1f%% > %.1f%% (p=%.3f)", row.DeltaPct, thr, row.P)
			case row.Significant && row.DeltaPct <= 0:
				gp.Reason = fmt.Sprintf("faster by %.1f%% (p=%.3f)", -row.DeltaPct, row.P)
			case row.Powerless:
				// Not significant only because it cannot be: with these
				// counts even a total separation gives p above α.
				gp.Undecided, gp.NeedSamples = true, decision.SamplesToDecide(&row, opts.Threshold)
				gp.Reason = fmt.Sprintf("UNDECIDED: %+.1f%%, but %d+%d samples cannot reach α=%.2f (smallest p %.3f); need ≥ %d per side",
					row.DeltaPct, row.N2, row.N1, decision.Alpha, stats.MinP(row.N1, row.N2), gp.NeedSamples)
			case row.RatioHi*100 > thr:
				// The test did not reject "same", but the interval still
				// holds slowdowns beyond the threshold: absence of evidence.
				gp.Undecided, gp.NeedSamples = true, decision.SamplesToDecide(&row, opts.Threshold)
				gp.Reason = fmt.Sprintf("UNDECIDED: %+.1f%% (p=%.3f), 95%% interval up to %s > %.1f%%; need about %d per side",
					row.DeltaPct, row.P, fmtWorst(row.RatioHi), thr, gp.NeedSamples)
			case row.Significant:
				gp.Reason = fmt.Sprintf("slower by %.1f%%, within the %.1f%% threshold (p=%.3f)", row.DeltaPct, thr, row.P)
			default:
				gp.Reason = fmt.Sprintf("~ within noise (p=%.3f, at worst %s)", row.P, fmtWorst(row.RatioHi))
			}
			if gp.Undecided {
				res.Undecided++
				res.SamplesPerSide = max(res.SamplesPerSide, gp.NeedSamples)
			}
			res.Points = append(res.Points, gp)
		}
	}
}

// fmtWorst renders the upper bound of a change as "+1.9%", or "+∞" when
// a side has too few samples for an interval.
func fmtWorst(f float64) string {
	if math.IsInf(f, 1) {
		return "+∞"
	}
	return fmt.Sprintf("%+.1f%%", f*100)
}

// variantsHint lists the variants present, for the message of a candidate
// that is not among them.
func variantsHint(rows []row) string {
	seen := map[string]bool{}
	var names []string
	for _, r := range rows {
		if !seen[r.variant()] {
			seen[r.variant()] = true
			names = append(names, r.variant())
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return " (the records hold: " + strings.Join(names, ", ") + ")"
}

func shapeName(r *row) string {
	if r == nil {
		return "?"
	}
	return r.Label
}

func firstProbe(r *row, probes []results.Probe) *results.Measurement {
	for _, p := range probes {
		if m := r.probe(p); m != nil && m.Summary.Median > 0 {
			return m
		}
	}
	return nil
}

// checkExpected adds to Missing every point of the plan (opts.Expected)
// without a record of its configuration: a deleted record must not pass
// for a point nobody asked about.
func (res *GateResult) checkExpected(rows []row, opts GateOptions) {
	have := map[string]bool{}
	id := func(c *results.Config) string {
		k := decision.KeyFor("", c)
		return fmt.Sprint(k.Variant, "|", k.Defines, "|", k.Shape, "|", k.NKV)
	}
	for i := range rows {
		have[id(rows[i].cfg())] = true
	}
	for i := range opts.Expected {
		c := &opts.Expected[i]
		if !have[id(c)] {
			res.Missing = append(res.Missing, fmt.Sprintf("%s nkv=%d: planned point %s has no record", decision.ShapeLabel(c.Shape), c.NKV, decision.ConfigLabel(c)))
		}
	}
}

// checkCoverage adds to Missing every point where the baseline was
// measured and a candidate configuration recorded at that device and shape
// has no record: the fastest configuration at a point is only the fastest
// of those present, so a deleted record could hide the one that regresses.
func (res *GateResult) checkCoverage(cand []row, bkeys []gatePointKey, bb, cb map[gatePointKey]*row) {
	type at struct {
		decision.ConfigKey
		nkv int
	}
	has := map[at]bool{}
	var configs []decision.ConfigKey
	for i := range cand {
		k := cand[i].Key
		if !has[at{k.ConfigKey, 0}] {
			has[at{k.ConfigKey, 0}] = true
			configs = append(configs, k.ConfigKey)
		}
		has[at{k.ConfigKey, k.NKV}] = true
	}
	for _, bk := range bkeys {
		if cb[bk] == nil {
			continue // said already: no measured candidate record
		}
		for _, c := range configs {
			if c.Device == bk.Device && c.Shape == bk.Shape && !has[at{c, bk.NKV}] {
				res.Missing = append(res.Missing, fmt.Sprintf("%s nkv=%d: candidate %s %s has no record here, at other lengths it has",
					shapeName(bb[bk]), bk.NKV, c.Variant, strings.ReplaceAll(c.Defines, ",", " ")))
			}
		}
	}
}
