package plan

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/ktune/ktune/internal/spec"
)

// clusters evaluates the thread-block cluster of each of a variant's
// launches at one shape, define combination and nkv (zero for a launch
// without one) and checks its size against the variant's limit. common
// is the cluster the kernels' CLUSTER_* defines say: the one the clustered
// launches share, zero when none has one. Launches with different
// clusters are an error: one source gets one set of defines.
func (b *builder) clusters(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int) (each [][3]int, common [3]int, err error) {
	specs := launchesOf(v, sh.KVType().Scaled, sh.Attention, pointIO(v, defs))
	each = make([][3]int, len(specs))
	_, eval := b.evaluator(v, sh, defs, nkv)
	first := -1
	for li, ls := range specs {
		if len(ls.Cluster) == 0 {
			continue
		}
		c := [3]int{1, 1, 1}
		for i, src := range ls.Cluster {
			n, err := eval(fmt.Sprintf("%scluster[%d]", launchPrefix(v, li), i), src, 1, 1<<31-1)
			if err != nil {
				return nil, common, err
			}
			c[i] = int(n)
		}
		if err := spec.CheckClusterSize(c, v.ClusterNonPortable); err != nil {
			return nil, common, b.pointErrorf(v, sh, defs, nkv, "%scluster: %w", launchPrefix(v, li), err)
		}
		if first >= 0 && c != common {
			return nil, common, b.pointErrorf(v, sh, defs, nkv, "launches[%d] and launches[%d] run in different clusters (%s, %s): the kernels' %s, %s and %s defines can say only one",
				first, li, dims(common), dims(c), DefineClusterX, DefineClusterY, DefineClusterZ)
		}
		first, common, each[li] = li, c, c
	}
	return each, common, nil
}

// withCluster returns defs with the CLUSTER_* defines of cluster c added
// (defs itself when c is zero).
func withCluster(defs map[string]string, c [3]int) map[string]string {
	if c == ([3]int{}) {
		return defs
	}
	defs = maps.Clone(defs)
	for i, name := range []string{DefineClusterX, DefineClusterY, DefineClusterZ} {
		defs[name] = strconv.Itoa(c[i])
	}
	return defs
}

// clusterFits checks that the cluster of each of a point's launches
// divides the launch's grid, as the driver requires: at the point's nkv
// and, for a first launch whose grid reads nkv, at every length the gates
// launch it at.
func (b *builder) clusterFits(v *spec.Variant, sh *spec.Shape, defs map[string]string, pt *Point) error {
	for li, l := range pt.Launches {
		if l.Cluster == ([3]int{}) {
			continue
		}
		type at struct {
			nkv  int
			grid [3]int
		}
		grids := []at{{pt.Config.NKV, l.Grid}}
		if li == 0 && pt.Geometry != nil {
			lengths := append(append([]int{pt.CaptureNKV}, pt.GateNKV...), pt.ReplayNKV...)
			for _, n := range lengths {
				// A length the grid cannot be evaluated at keeps the
				// planned grid in the probe (geometryAt).
				if g, err := pt.Geometry.At(n); err == nil {
					grids = append(grids, at{n, g})
				}
			}
		}
		for _, g := range grids {
			for i := range 3 {
				if g.grid[i]%l.Cluster[i] == 0 {
					continue
				}
				where := ""
				if g.nkv != pt.Config.NKV {
					where = fmt.Sprintf(" at nkv %d (a length the gates launch it at)", g.nkv)
				}
				return b.pointErrorf(v, sh, defs, pt.Config.NKV, "%scluster %s does not divide the grid %s%s: grid %c %d is not a multiple of %d",
					launchPrefix(v, li), dims(l.Cluster), dims(g.grid), where, "xyz"[i], g.grid[i], l.Cluster[i])
			}
		}
	}
	return nil
}

// launchPrefix names launch li of a variant in messages: the ABI's
// launches keep their historical names (grid, cluster), a declared
// signature's are launches[i].
func launchPrefix(v *spec.Variant, li int) string {
	if declared(v) {
		return fmt.Sprintf("launches[%d].", li)
	}
	return ""
}

// dims writes a geometry as x×y×z.
func dims(d [3]int) string { return fmt.Sprintf("%d×%d×%d", d[0], d[1], d[2]) }
