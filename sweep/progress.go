package sweep

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// progress shows how far a sweep is. On a terminal it keeps one line,
// rewritten as each point starts ("[12/96] d2 SPLITS=32 nkv=8192  ETA
// 1m40s"), and leaves a permanent line only for points that did not pass;
// elsewhere (a log file, CI) it prints one line per finished point, with
// the time left estimated from the points done so far ("~1m40s left").
type progress struct {
	w     io.Writer
	tty   bool
	total int
	clock func() time.Time
	lab   *labeler
	first time.Time // when the first point started
	done  int
	shown bool // a status line is on the terminal
}

func newProgress(w io.Writer, tty bool, total int, clock func() time.Time, lab *labeler) *progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w, tty: tty, total: total, clock: clock, lab: lab}
}

func (pr *progress) label(p *plan.Point) string { return pr.lab.label(p) }

// begin shows that point i (0-based among the points to run) starts.
func (pr *progress) begin(i int, p *plan.Point) {
	now := pr.clock()
	if i == 0 {
		pr.first = now
	}
	if !pr.tty {
		return
	}
	line := fmt.Sprintf("[%d/%d] %s", i+1, pr.total, pr.label(p))
	if pr.done > 0 {
		// The mean over finished points: sweeps run shapes and variants in
		// a stable order, so the past is a fair guess of the rest.
		per := now.Sub(pr.first) / time.Duration(pr.done)
		line += "  ETA " + fmtETA(per*time.Duration(pr.total-i))
	}
	// \r and erase-to-end-of-line redraw in place, without knowing the
	// width of what was there.
	fmt.Fprintf(pr.w, "\r\x1b[K%s", line)
	pr.shown = true
}

// end reports that point i finished with rec after took.
func (pr *progress) end(i int, p *plan.Point, rec *results.Record, took time.Duration) {
	pr.done++
	if pr.tty && rec.Status == results.StatusOK {
		return
	}
	pr.clear()
	left := ""
	if !pr.tty && pr.done < pr.total {
		// The same estimate as the terminal's ETA, from the points done.
		per := pr.clock().Sub(pr.first) / time.Duration(pr.done)
		left = "  ~" + fmtETA(per*time.Duration(pr.total-pr.done)) + " left"
	}
	fmt.Fprintf(pr.w, "[%d/%d] %s  %s%s\n", i+1, pr.total, pr.label(p), outcome(rec, took), left)
}

// clear removes the status line so that other output starts on a clean
// line.
func (pr *progress) clear() {
	if pr.shown {
		fmt.Fprint(pr.w, "\r\x1b[K")
		pr.shown = false
	}
}

func (pr *progress) finish() { pr.clear() }

// outcome is the status of a finished point with its headline number or
// its reason.
func outcome(rec *results.Record, took time.Duration) string {
	parts := []string{string(rec.Status)}
	switch rec.Status {
	case results.StatusOK:
		m := rec.Probe(results.ProbeCold)
		if m == nil && len(rec.Probes) > 0 {
			m = &rec.Probes[0]
		}
		if m != nil {
			parts = append(parts, fmt.Sprintf("%s %s", m.Probe, fmtNS(m.Summary.Median)))
		}
	case results.StatusGateFailed:
		for _, g := range rec.Gates {
			if !g.Pass {
				parts = append(parts, fmt.Sprintf("%s gate at nkv=%d", g.Kind, g.NKV))
				break
			}
		}
	default:
		if rec.Error != "" {
			msg, _, _ := strings.Cut(rec.Error, "\n")
			if len(msg) > 100 {
				msg = msg[:100] + "…"
			}
			parts = append(parts, msg)
		}
	}
	parts = append(parts, "("+fmtETA(took)+")")
	return strings.Join(parts, "  ")
}

// fmtNS formats nanoseconds with three significant digits or so, the
// resolution CUDA events give at these durations.
func fmtNS(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.0fns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1fµs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.2fms", ns/1e6)
	}
	return fmt.Sprintf("%.2fs", ns/1e9)
}

// fmtETA formats a duration to the second (tenths below ten seconds).
func fmtETA(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// A labeler names points by what tells them apart in one plan: the variant
// and nkv always, the shape when the plan has several, and only the
// defines whose value varies (HEAD_DIM or a fixed NR would be noise).
type labeler struct {
	shapes  bool
	defines []string
}

func newLabeler(points []*plan.Point) *labeler {
	l := &labeler{}
	shapes := map[string]bool{}
	values := map[string]map[string]bool{}
	configs := make([]*results.Config, len(points))
	for i, p := range points {
		configs[i] = &p.Config
	}
	names := results.DefineNames(configs)
	for _, p := range points {
		shapes[p.Config.Shape.Name] = true
		for _, n := range names {
			v, ok := p.Config.Define(n)
			if !ok {
				v = "\x00unset"
			}
			if values[n] == nil {
				values[n] = map[string]bool{}
			}
			values[n][v] = true
		}
	}
	l.shapes = len(shapes) > 1
	for _, n := range names {
		if len(values[n]) > 1 {
			l.defines = append(l.defines, n)
		}
	}
	// SPLITS first: it is the axis every sweep turns.
	slices.SortStableFunc(l.defines, func(a, b string) int {
		return boolCmp(b == abi.DefineSplits, a == abi.DefineSplits)
	})
	return l
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func (l *labeler) label(p *plan.Point) string {
	parts := []string{p.Config.Variant}
	if l.shapes {
		parts = append(parts, p.Config.Shape.Name)
	}
	for _, n := range l.defines {
		if v, ok := p.Config.Define(n); ok {
			parts = append(parts, n+"="+v)
		}
	}
	parts = append(parts, "nkv="+strconv.Itoa(p.Config.NKV))
	return strings.Join(parts, " ")
}
