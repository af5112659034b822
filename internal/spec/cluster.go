// Thread-block clusters: the variant key cluster (the first launch of the
// ABI's signature), the launch key of the same name and
// cluster_nonportable.

package spec

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/internal/expr"
)

// The most blocks a thread-block cluster may hold: MaxClusterPortable on
// every GPU that has clusters, MaxClusterNonPortable with
// cluster_nonportable: true where the GPU allows it (sm_90 does).
const (
	MaxClusterPortable    = 8
	MaxClusterNonPortable = 16
)

// CheckClusterSize reports a cluster of more blocks than a launch may
// have: MaxClusterPortable, or MaxClusterNonPortable when nonPortable.
func CheckClusterSize(dims [3]int, nonPortable bool) error {
	size := int64(1)
	for _, n := range dims {
		size *= int64(min(max(n, 1), MaxClusterNonPortable+1))
	}
	switch {
	case size <= MaxClusterPortable:
		return nil
	case !nonPortable:
		return fmt.Errorf("cluster %d×%d×%d has %d blocks, more than the portable %d (cluster_nonportable: true allows up to %d on the GPUs that support it)",
			dims[0], dims[1], dims[2], dims[0]*dims[1]*dims[2], MaxClusterPortable, MaxClusterNonPortable)
	case size > MaxClusterNonPortable:
		return fmt.Errorf("cluster %d×%d×%d has %d blocks, more than %d (the non-portable limit)",
			dims[0], dims[1], dims[2], dims[0]*dims[1]*dims[2], MaxClusterNonPortable)
	}
	return nil
}

// cluster decodes a cluster: 1 to 3 dimensions (x, y, z), each an
// integer or an expression over the grid's symbols; clusters checks them.
func (d *decoder) cluster(n *yaml.Node, where string) ([]string, []*yaml.Node) {
	l, ok := d.list(n, where, true)
	if !ok {
		return nil, nil
	}
	if len(l) < 1 || len(l) > 3 {
		d.errorf(n, "%s: want 1 to 3 dimensions (x, y, z), got %d (quote an expression with a comma)", where, len(l))
		return nil, nil
	}
	var dims []string
	for _, e := range l {
		dims = append(dims, d.str(e, where))
	}
	return dims, l
}

// clusters checks the clusters of variant i: given per launch when it
// declares launches, each dimension ≥ 1 and fixed for the kernel (no nkv),
// no more blocks than the limit where the dimensions are literals (the
// plan checks the others, and that each divides the grid, per point), and
// cluster_nonportable only beside a cluster.
func (d *decoder) clusters(s *Spec, i int, w *where) {
	v, vn := &s.Variants[i], w.variants[i]
	if len(v.Launches) > 0 && len(vn.cluster) > 0 {
		d.errorf(vn.cluster[0], "variants[%d] (%s): with launches, cluster is given per launch", i, v.Name)
	}
	some := len(v.Cluster) > 0
	d.clusterDims(s, i, v.Cluster, vn.cluster, "cluster")
	for j, l := range v.Launches {
		some = some || len(l.Cluster) > 0
		d.clusterDims(s, i, l.Cluster, vn.engine.launch[j].cluster, fmt.Sprintf("launches[%d].cluster", j))
	}
	if v.ClusterNonPortable && !some {
		d.errorf(vn.nonPortable, "variants[%d] (%s).cluster_nonportable: the variant sets no cluster (cluster: [x, y, z])", i, v.Name)
	}
}

func (d *decoder) clusterDims(s *Spec, i int, dims []string, nodes []*yaml.Node, key string) {
	if len(dims) == 0 {
		return
	}
	v := &s.Variants[i]
	lit, literal := [3]int{1, 1, 1}, true
	for j, src := range dims {
		k := fmt.Sprintf("%s[%d]", key, j)
		n, err := strconv.Atoi(strings.TrimSpace(src))
		if err == nil {
			if n < 1 {
				d.errorf(nodes[j], "variants[%d] (%s).%s: %d: a cluster dimension counts blocks, ≥ 1", i, v.Name, k, n)
				literal = false
			}
			lit[j] = n
			continue
		}
		literal = false
		d.checkExpr(s, i, src, nodes[j], k)
		if e, err := expr.Parse(src); err == nil && contains(e.Symbols(), NKV) {
			d.errorf(nodes[j], "variants[%d] (%s).%s: %q reads nkv: a kernel's cluster is fixed (a captured graph keeps it), it cannot follow the context length",
				i, v.Name, k, src)
		}
	}
	if !literal {
		return
	}
	if err := CheckClusterSize(lit, v.ClusterNonPortable); err != nil {
		d.errorf(nodes[0], "variants[%d] (%s).%s: %v", i, v.Name, key, err)
	}
}
