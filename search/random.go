package search

import (
	"context"
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
)

var randomRegistration = Registration{
	Name:    "random",
	Summary: "--samples N configurations drawn with --seed, each at every nkv, plus the landed one",
	Seeded:  true,
	Flags: func(fs *flag.FlagSet) func(Common) (Strategy, error) {
		n := fs.Int("samples", 0, "random: how many configurations to draw (`N`; the landed one is added)")
		return func(c Common) (Strategy, error) {
			if *n < 1 && !c.Simulated {
				return nil, fmt.Errorf("--search random wants --samples N (N ≥ 1 configurations to draw)")
			}
			return &random{samples: *n, seed: c.Seed, all: c.Simulated}, nil
		}
	},
}

// random proposes a seeded draw of configurations in one round. Simulated,
// it draws every configuration, in the order of the draw, so that a
// simulation sees what each sample size would have found.
type random struct {
	samples int
	seed    uint64
	all     bool
	done    bool
}

func (r *random) Settings() map[string]string {
	return map[string]string{"seed": strconv.FormatUint(r.seed, 10), "samples": strconv.Itoa(r.samples)}
}

func (r *random) Next(_ context.Context, st *State) (Proposal, error) {
	if r.done {
		return Proposal{}, nil
	}
	r.done = true
	configs := st.Space.Configs
	var drawn []*Configuration
	if r.all {
		// The landed configuration first, as every draw holds it.
		order := drawOrder(len(configs), len(configs), r.seed)
		for _, i := range order {
			if configs[i].Landed {
				drawn = append(drawn, configs[i])
			}
		}
		for _, i := range order {
			if !configs[i].Landed {
				drawn = append(drawn, configs[i])
			}
		}
	} else {
		drawn = Sample(configs, r.samples, r.seed)
	}
	var pr Proposal
	for _, c := range drawn {
		pr.Points = append(pr.Points, c.Points...)
	}
	pr.Of = 1
	return pr, nil
}

// Sample draws n of configs with a generator seeded by seed and adds the
// landed configurations not drawn; the result is in the order of configs.
func Sample(configs []*Configuration, n int, seed uint64) []*Configuration {
	if n >= len(configs) {
		return slices.Clone(configs)
	}
	pick := make([]bool, len(configs))
	for _, i := range drawOrder(len(configs), n, seed) {
		pick[i] = true
	}
	var out []*Configuration
	for i, c := range configs {
		if pick[i] || c.Landed {
			out = append(out, c)
		}
	}
	return out
}

// drawOrder returns the first n indices of a seeded shuffle of [0, size).
// The draw is a partial Fisher-Yates shuffle over PCG's output, which
// math/rand/v2 keeps stable across Go releases, so that a seed names the
// same sample everywhere; a longer draw of the same seed extends a
// shorter one.
func drawOrder(size, n int, seed uint64) []int {
	src := rand.NewPCG(seed, 0x6b74756e65) // "ktune"
	idx := make([]int, size)
	for i := range idx {
		idx[i] = i
	}
	for i := 0; i < n; i++ {
		// The high word of x·m is uniform on [0, m) up to a bias of m/2⁶⁴.
		hi, _ := bits.Mul64(src.Uint64(), uint64(size-i))
		j := i + int(hi)
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:n]
}
