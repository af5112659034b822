package spec

import (
	"reflect"
	"testing"
)

// cluster decodes on a variant (the ABI's partial launch) and on each
// launch entry, literals and expressions alike; cluster_nonportable
// raises the limit a literal cluster is checked against.
func TestClusterKeys(t *testing.T) {
	s, err := Load("testdata/cluster.yaml", testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Variants[0]; !reflect.DeepEqual(v.Cluster, []string{"2"}) || v.ClusterNonPortable {
		t.Errorf("r4: cluster %q non-portable %v", v.Cluster, v.ClusterNonPortable)
	}
	if v := s.Variants[1]; !reflect.DeepEqual(v.Cluster, []string{"SPLITS / 4", "1", "1"}) {
		t.Errorf("r4x: cluster %q", v.Cluster)
	}
	v := s.Variants[2]
	if len(v.Cluster) != 0 || !v.ClusterNonPortable || len(v.Launches) != 2 {
		t.Fatalf("eng: cluster %q non-portable %v, %d launches", v.Cluster, v.ClusterNonPortable, len(v.Launches))
	}
	if c := v.Launches[0].Cluster; !reflect.DeepEqual(c, []string{"4", "4"}) {
		t.Errorf("eng launch 0: cluster %q, want [4 4]", c)
	}
	if c := v.Launches[1].Cluster; c != nil {
		t.Errorf("eng launch 1: cluster %q, want none", c)
	}
}
