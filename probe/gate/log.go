package gate

import (
	"slices"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// A Log collects what the gates of a point leave: their verdicts and the
// fresh gate's reference launch.
//
// Every verdict on the uniform set is kept, as before there were other
// sets; on the other sets a log keeps every failure and, per kind and
// buffer, the passing verdict closest to its bound, so that a record
// carries the evidence without five copies of every length.
type Log struct {
	// Gates are the verdicts kept, in the order they were added.
	Gates []results.Gate
	kept  map[string]int // index in Gates of the kept pass, by kind/inputs/buffer
	// Reference is the fresh gate's launch on the gated module, which the
	// probe runs again after timing (nil when the fresh gate did not run).
	Reference *Launch
}

// A Launch is one gate launch's outputs at a length, kept to compare the
// same launch with later.
type Launch struct {
	NKV int
	Outputs
}

// Add adds a verdict.
func (l *Log) Add(g results.Gate) {
	if !g.Pass || g.Inputs == "" || g.Inputs == string(oracle.SetUniform) {
		l.Gates = append(l.Gates, g)
		return
	}
	key := string(g.Kind) + "/" + g.Inputs + "/" + g.Buffer
	if l.kept == nil {
		l.kept = map[string]int{}
	}
	if i, ok := l.kept[key]; ok {
		if g.NMSE > l.Gates[i].NMSE {
			l.Gates[i] = g
		}
		return
	}
	l.kept[key] = len(l.Gates)
	l.Gates = append(l.Gates, g)
}

// Pass reports whether every verdict of the log passed.
func (l *Log) Pass() bool {
	return !slices.ContainsFunc(l.Gates, func(g results.Gate) bool { return !g.Pass })
}

// Findings are what the checks that follow every launch (the read-only
// inputs, the guard regions) found: the first failure per kind and buffer
// (later ones repeat it), how many launches they followed, and how many of
// the failures the gates' verdicts hold; the rest were found after.
type Findings struct {
	gates   []results.Gate
	flagged map[string]bool
	checks  int
	gated   int
}

// Flag keeps a failure: the first per kind and buffer, which is the
// evidence.
func (f *Findings) Flag(g results.Gate) {
	key := string(g.Kind) + "/" + g.Buffer
	if f.flagged == nil {
		f.flagged = map[string]bool{}
	}
	if f.flagged[key] {
		return
	}
	f.flagged[key] = true
	f.gates = append(f.gates, g)
}

// Checked counts one launch the checks followed.
func (f *Findings) Checked() { f.checks++ }

// AfterGates are the failures found after the memory gate reported.
func (f *Findings) AfterGates() []results.Gate { return f.gates[f.gated:] }
