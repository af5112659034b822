package verdict

import (
	"fmt"

	"github.com/ktune/ktune/internal/decision"
)

// Counts sums up a gate's point rows, so that a verdict line says what
// it rests on: one regression among many wins reads differently from a
// candidate slower everywhere.
type Counts struct {
	Faster    int `json:"faster"`    // significantly faster
	Slower    int `json:"slower"`    // significantly slower beyond the threshold
	Within    int `json:"within"`    // not significantly different, or slower within the threshold
	Undecided int `json:"undecided"` // the samples cannot tell
}

func countPoints(ps []GatePoint) Counts {
	var c Counts
	for _, p := range ps {
		switch {
		case p.Undecided:
			c.Undecided++
		case p.Regression:
			c.Slower++
		case p.P < decision.Alpha && p.DeltaPct < 0: // significant: stats.Comparison's P < α
			c.Faster++
		default:
			c.Within++
		}
	}
	return c
}

// String renders the counts for the verdict line.
func (c Counts) String() string {
	return fmt.Sprintf("%d point(s): %d faster, %d slower beyond the threshold, %d within it or noise, %d undecided",
		c.Faster+c.Slower+c.Within+c.Undecided, c.Faster, c.Slower, c.Within, c.Undecided)
}
