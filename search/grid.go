package search

import (
	"context"
	"flag"
)

var gridRegistration = Registration{
	Name:    "grid",
	Summary: "every point, as 'ktune sweep' measures them (the default)",
	Flags: func(*flag.FlagSet) func(Common) (Strategy, error) {
		return func(Common) (Strategy, error) { return newGrid(), nil }
	},
}

// grid proposes every point of the space at once, in plan order.
type grid struct{ done bool }

func newGrid() *grid { return &grid{} }

func (g *grid) Next(_ context.Context, st *State) (Proposal, error) {
	if g.done {
		return Proposal{}, nil
	}
	g.done = true
	return Proposal{Points: st.Space.Points, Of: 1}, nil
}
