package report

import (
	"sort"

	"github.com/ktune/ktune/internal/results"
)

// bwNoise is the relative spread of the measured read bandwidth that
// still counts as one machine: the streaming read kernel gives values a
// few percent apart from run to run on the same GPU (4274–4414 GB/s over
// the committed H200 runs, 3.3%), which says nothing about the machine.
const bwNoise = 0.05

// An EnvGroup is a set of environments that differ only in what does not
// change a measurement: the host name, the ktune build, and the measured
// read bandwidth within bwNoise. One row per run would repeat the same
// machine once per results file.
type EnvGroup struct {
	// Env holds the fields every member shares; Host, Ktune and
	// ReadBWGBps are those of the first member.
	results.Env
	Runs    int      `json:"runs"`    // distinct environments (runs) in the group
	Records int      `json:"records"` // records measured in them
	Hosts   []string `json:"hosts"`   // distinct host names, sorted
	Builds  []string `json:"builds"`  // distinct ktune builds (or reference tools), sorted
	// ReadBWMin and ReadBWMax bound the measured read bandwidths (GB/s).
	ReadBWMin float64 `json:"read_bw_min_gbps"`
	ReadBWMax float64 `json:"read_bw_max_gbps"`
}

// envIdentity is what must be equal for two environments to share a
// group.
type envIdentity struct {
	Device, Arch, Driver, NVRTC string
	SMs                         int
	L2, Mem                     int64
	Clock, MemClock             float64
}

func envs(recs []results.Record) []EnvGroup {
	type run struct {
		env     results.Env
		records int
	}
	var runs []run
	idx := map[results.Env]int{}
	for i := range recs {
		e := recs[i].Env
		if j, ok := idx[e]; ok {
			runs[j].records++
			continue
		}
		idx[e] = len(runs)
		runs = append(runs, run{env: e, records: 1})
	}
	byID := map[envIdentity][]run{}
	var ids []envIdentity
	for _, r := range runs {
		e := r.env
		id := envIdentity{e.Device, e.Arch, e.Driver, e.NVRTC, e.SMs, e.L2Bytes, e.MemBytes, e.ClockMHz, e.MemClockMHz}
		if _, ok := byID[id]; !ok {
			ids = append(ids, id)
		}
		byID[id] = append(byID[id], r)
	}
	var out []EnvGroup
	for _, id := range ids {
		rs := byID[id]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].env.ReadBWGBps < rs[j].env.ReadBWGBps })
		var g *EnvGroup
		for _, r := range rs {
			bw := r.env.ReadBWGBps
			if g == nil || bw > g.ReadBWMin*(1+bwNoise) {
				out = append(out, EnvGroup{Env: r.env, ReadBWMin: bw, ReadBWMax: bw})
				g = &out[len(out)-1]
			}
			g.Runs++
			g.Records += r.records
			g.ReadBWMax = max(g.ReadBWMax, bw)
			g.Hosts = addSorted(g.Hosts, r.env.Host)
			g.Builds = addSorted(g.Builds, r.env.Ktune)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Device != out[j].Device {
			return out[i].Device < out[j].Device
		}
		return out[i].Records > out[j].Records
	})
	return out
}

func addSorted(xs []string, x string) []string {
	if x == "" {
		return xs
	}
	i := sort.SearchStrings(xs, x)
	if i < len(xs) && xs[i] == x {
		return xs
	}
	return append(xs[:i], append([]string{x}, xs[i:]...)...)
}
