package plan

import (
	"testing"

	"github.com/ktune/ktune/internal/spec"
)

// cluster: [2] runs the partial launch in clusters of 2 blocks, builds
// the kernels with CLUSTER_X/Y/Z and hashes both; the variants that do not
// depend on it keep their hashes, and cluster and pdl hash apart.
func TestClusterVariant(t *testing.T) {
	s := load(t, "testdata/mixed.yaml", testKernels(t))
	base, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	tr4 := s.Variant("tr4")
	tr4.Cluster = []string{"2"}
	p, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	for i, pt := range p.Points {
		clustered := pt.Config.Variant == "tr4"
		for name, want := range map[string]string{DefineClusterX: "2", DefineClusterY: "1", DefineClusterZ: "1"} {
			if v, ok := pt.Config.Define(name); ok != clustered || (clustered && v != want) {
				t.Errorf("point %d (%s): %s define %q %v", i, pt.Config.Variant, name, v, ok)
			}
		}
		want := [3]int{}
		if clustered {
			want = [3]int{2, 1, 1}
		}
		if pt.Launches[0].Cluster != want || (len(pt.Launches) > 1 && pt.Launches[1].Cluster != [3]int{}) {
			t.Errorf("point %d (%s): clusters %v, want %v on the partial launch alone", i, pt.Config.Variant, pt.Launches, want)
		}
		// td2's twin is tr4: its gate key moved, and with it td2's hash.
		if changed := pt.Hash != base.Points[i].Hash; changed != (clustered || pt.Config.Variant == "td2") {
			t.Errorf("point %d (%s): hash changed %v", i, pt.Config.Variant, changed)
		}
	}

	// pdl and cluster together: both attributes, a hash of its own.
	tr4.PDL = true
	both, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	tr4.Cluster = nil
	pdl, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	pt := both.Points[0]
	if pt.Config.Variant != "tr4" || !pt.Launches[1].Programmatic || pt.Launches[0].Cluster != [3]int{2, 1, 1} {
		t.Fatalf("point 0 (%s): launches %+v", pt.Config.Variant, pt.Launches)
	}
	if h := []string{base.Points[0].Hash, p.Points[0].Hash, pdl.Points[0].Hash, pt.Hash}; h[1] == h[3] || h[2] == h[3] || h[0] == h[2] {
		t.Errorf("hashes plain %s, cluster %s, pdl %s, both %s: want four", h[0], h[1], h[2], h[3])
	}
	if pt.GateKey == pdl.Points[0].GateKey || pt.GateKey == p.Points[0].GateKey {
		t.Error("the cluster does not move the gate key")
	}
}

// The hash of a point says which launch runs in clusters, beyond the
// defines: the same cluster on another launch hashes apart.
func TestClusterLaunchHashed(t *testing.T) {
	spec := func(first, second string) string {
		return `
name: c
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [100], SPLITS: [8]}
variants:
  - name: u
    kernel: user.cu
    launches:
      - {entry: p, grid: [SPLITS, heads], block: [32], ` + first + `args: [q, k, v, positions, partial, heads]}
      - {entry: c, grid: [heads], block: [head_dim], ` + second + `args: [partial, out, heads]}
`
	}
	a := buildInline(t, spec("cluster: [2], ", ""))
	b := buildInline(t, spec("", "cluster: [2], "))
	pa, pb := a.Points[0], b.Points[0]
	if pa.Launches[0].Cluster != [3]int{2, 1, 1} || pa.Launches[1].Cluster != [3]int{} || pb.Launches[1].Cluster != [3]int{2, 1, 1} {
		t.Errorf("clusters %v and %v", pa.Launches, pb.Launches)
	}
	if pa.Config.Defines.String() != pb.Config.Defines.String() || pa.Hash == pb.Hash {
		t.Errorf("defines %s and %s, hashes %s and %s: want the same defines and two hashes", pa.Config.Defines, pb.Config.Defines, pa.Hash, pb.Hash)
	}
}

func buildInline(t *testing.T, yaml string) *Plan {
	t.Helper()
	p, err := buildInlineErr(t, yaml)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func buildInlineErr(t *testing.T, yaml string) (*Plan, error) {
	t.Helper()
	s, err := spec.Parse("testdata/inline.yaml", []byte(yaml), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	return BuildFrom(s, "sm_90", fixedFS, Override{})
}

// What only a point's values show is a plan error naming the point: a
// cluster that does not divide the grid (for a grid that reads nkv, at
// any length the gates launch it at), one larger than the limit, and
// launches that disagree on the CLUSTER_* defines.
func TestClusterPlanErrors(t *testing.T) {
	head := `
name: c
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [100], SPLITS: [8, 16]}
gates: {nkv: [1, 29]}
variants:
`
	for _, c := range []struct{ variant, want string }{
		{`  - {name: u, kernel: user.cu, cluster: [3]}`,
			`testdata/inline.yaml:7:5: variant u, shape s, CLUSTER_X=3 CLUSTER_Y=1 CLUSTER_Z=1 SPLITS=8, nkv 100: cluster 3×1×1 does not divide the grid 8×8×1: grid x 8 is not a multiple of 3`},
		{`  - {name: u, kernel: user.cu, cluster: [1, group * 2 - 2]}`,
			`testdata/inline.yaml:7:5: variant u, shape s, CLUSTER_X=1 CLUSTER_Y=6 CLUSTER_Z=1 SPLITS=8, nkv 100: cluster 1×6×1 does not divide the grid 8×8×1: grid y 8 is not a multiple of 6`},
		{`  - {name: u, kernel: user.cu, cluster: [SPLITS]}`,
			`testdata/inline.yaml:7:5: variant u, shape s, SPLITS=16, nkv 100: cluster: cluster 16×1×1 has 16 blocks, more than the portable 8 (cluster_nonportable: true allows up to 16 on the GPUs that support it)`},
		{`  - {name: u, kernel: user.cu, grid: ["cdiv(nkv, 25)", heads], cluster: [2]}`,
			`testdata/inline.yaml:7:5: variant u, shape s, CLUSTER_X=2 CLUSTER_Y=1 CLUSTER_Z=1 SPLITS=8, nkv 100: cluster 2×1×1 does not divide the grid 1×8×1 at nkv 1 (a length the gates launch it at): grid x 1 is not a multiple of 2`},
		{`  - name: u
    kernel: user.cu
    launches:
      - {entry: p, grid: [SPLITS, heads], block: [32], cluster: [2], args: [q, k, v, positions, partial, heads]}
      - {entry: c, grid: [heads], block: [head_dim], cluster: [4], args: [partial, out, heads]}`,
			`testdata/inline.yaml:7:5: variant u, shape s, SPLITS=8, nkv 100: launches[0] and launches[1] run in different clusters (2×1×1, 4×1×1): the kernels' CLUSTER_X, CLUSTER_Y and CLUSTER_Z defines can say only one`},
	} {
		_, err := buildInlineErr(t, head+c.variant+"\n")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.variant, err, c.want)
		}
	}
	// cluster_nonportable allows the 16.
	p := buildInline(t, head+"  - {name: u, kernel: user.cu, cluster: [SPLITS], cluster_nonportable: true}\n")
	if c := p.Points[1].Launches[0].Cluster; c != [3]int{16, 1, 1} {
		t.Errorf("non-portable cluster %v, want 16×1×1", c)
	}
}
