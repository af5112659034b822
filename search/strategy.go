package search

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A Strategy decides which points of a space to time next. Search (on a
// device) and Simulate (over recorded results) drive every strategy the
// same way: ask Next for a proposal, time its points, record what came
// back in the State, ask again, until a proposal is empty.
type Strategy interface {
	// Next proposes the next points to time, given the space and every
	// measurement so far; a proposal without points ends the search. It is
	// called again only after every point of its last proposal was
	// measured (or failed), so a batch's compiles and gates can run in
	// parallel while the device times.
	Next(ctx context.Context, st *State) (Proposal, error)
}

// A Proposal is one batch of points a strategy asks to time.
type Proposal struct {
	// Points to time, in the order the strategy ranks them.
	Points []*plan.Point
	// Samples, when > 0, asks for a screening measurement: exactly this
	// many samples (or the spec's maximum, if lower), recorded apart from
	// the full measurements (ScreenDir) under hashes of their own. 0 is
	// the spec's own stopping rule: a measurement the table may use.
	Samples int
	// Note is added to every screening measurement's note, so that such a
	// record says what it is wherever it is read.
	Note string
	// Of is how many rounds the strategy expects in all, for messages; 0
	// when it cannot say.
	Of int
	// Dropped labels the configurations the measurements so far ruled
	// out; the search log records them on the previous round.
	Dropped []string
}

// An Observation is one measured point.
type Observation struct {
	Point   *plan.Point
	Samples int // the proposal's: 0 for a full measurement
	Record  results.Record
}

// A State is what a strategy sees: the space, and every measurement in
// the order it came back.
type State struct {
	Space    *Space
	Measured []Observation
	// Rounds are the proposals measured so far.
	Rounds int
	// Log receives the strategy's notes; never nil.
	Log io.Writer
}

// Full returns the full measurements so far by point hash (the latest of
// each point).
func (st *State) Full() map[string]*results.Record {
	out := map[string]*results.Record{}
	for i := range st.Measured {
		if o := &st.Measured[i]; o.Samples == 0 {
			out[o.Point.Hash] = &o.Record
		}
	}
	return out
}

// A FactsUser is a strategy that may learn from compile facts: a search
// compiles every point before timing when UsesFacts says so.
type FactsUser interface {
	UsesFacts() bool
}

// Common are the settings every strategy receives.
type Common struct {
	// Seed drives every random choice: the same seed, space and records
	// make the same proposals, on every machine, so that an interrupted
	// search resumes where it stopped.
	Seed uint64
	// Probe is the measurement that decides; never "" (cold by default).
	Probe results.Probe
	// Simulated is set when the strategy runs over recorded results to be
	// compared with others: a strategy whose size the user must choose
	// before it starts (random's --samples) proposes the whole space in
	// the order it would have drawn it, so the simulation sees what each
	// size would have found. A strategy with a stopping rule keeps it.
	Simulated bool
}

// A Registration is how a strategy joins the registry (registry.go).
type Registration struct {
	Name Name
	// Summary is one line for the help of 'ktune tune'.
	Summary string
	// Seeded is set when the strategy draws at random (Common.Seed).
	Seeded bool
	// Flags declares the strategy's own flags on fs (its names must not be
	// another strategy's: TestRegistry checks) and returns the function
	// that builds the strategy once fs is parsed; build reports a bad
	// flag value as an error that names the flag.
	Flags func(fs *flag.FlagSet) (build func(Common) (Strategy, error))
}

// A Name names a strategy of the registry.
type Name string

// Names lists the registered strategies in registry order.
func Names() []Name {
	out := make([]Name, len(registry))
	for i, r := range registry {
		out[i] = r.Name
	}
	return out
}

// Lookup returns the registration of name.
func Lookup(name string) (Registration, error) {
	for _, r := range registry {
		if string(r.Name) == strings.TrimSpace(name) {
			return r, nil
		}
	}
	var names []string
	for _, n := range Names() {
		names = append(names, string(n))
	}
	return Registration{}, fmt.Errorf("unknown search %q: want one of %s", name, strings.Join(names, ", "))
}

// Flags is every strategy's flags declared on one flag set: what a
// command needs to build the chosen strategy and to refuse the flags of
// the others.
type Flags struct {
	fs     *flag.FlagSet
	builds map[Name]func(Common) (Strategy, error)
	owner  map[string]Name // flag name → the strategy declaring it
}

// DeclareFlags declares the flags of every registered strategy on fs.
func DeclareFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs, builds: map[Name]func(Common) (Strategy, error){}, owner: map[string]Name{}}
	for _, r := range registry {
		before := map[string]bool{}
		fs.VisitAll(func(fl *flag.Flag) { before[fl.Name] = true })
		f.builds[r.Name] = r.Flags(fs)
		fs.VisitAll(func(fl *flag.Flag) {
			if !before[fl.Name] {
				f.owner[fl.Name] = r.Name
			}
		})
	}
	return f
}

// Owner returns the strategy that declared the flag name, "" for none.
func (f *Flags) Owner(name string) Name { return f.owner[name] }

// Build builds the named strategy from the parsed flags, after Check.
func (f *Flags) Build(name Name, c Common) (Strategy, error) {
	if err := f.Check(name); err != nil {
		return nil, err
	}
	return f.New(name, c)
}

// Check refuses a flag set on the command line that belongs to a
// strategy not among names, naming it.
func (f *Flags) Check(names ...Name) error {
	var foreign []string
	f.fs.Visit(func(fl *flag.Flag) {
		if o := f.owner[fl.Name]; o != "" && !slices.Contains(names, o) {
			foreign = append(foreign, fmt.Sprintf("--%s belongs to --search %s", fl.Name, o))
		}
	})
	if len(foreign) > 0 {
		slices.Sort(foreign)
		return fmt.Errorf("%s", strings.Join(foreign, "; "))
	}
	return nil
}

// New builds the named strategy from the parsed flags.
func (f *Flags) New(name Name, c Common) (Strategy, error) {
	build, ok := f.builds[name]
	if !ok {
		_, err := Lookup(string(name))
		return nil, err
	}
	if c.Probe == "" {
		c.Probe = results.ProbeCold
	}
	return build(c)
}

// FlagsOf returns the names of the flags name declares, sorted.
func (f *Flags) FlagsOf(name Name) []string {
	var out []string
	for fl, o := range f.owner {
		if o == name {
			out = append(out, fl)
		}
	}
	slices.Sort(out)
	return out
}
