package probe

import (
	"testing"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// A variant's cluster and pdl reach the launch attributes of the one
// launch path: the partial launch in clusters, the combine launch
// programmatic.
func TestLaunchAttrsCluster(t *testing.T) {
	p := planned(t, `name: t
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 16, capacity: 4096}]
axes: {nkv: [4096], SPLITS: [8]}
variants:
  - {name: d2, kernel: d2, defines: {NR: 4}, cluster: [2, 2], pdl: true}
  - {name: plain, kernel: d2, defines: {NR: 4}}
`, nil)
	w := testWorkspace()
	w.l = layout{splits: 8}
	pt := p.Points[0]
	ls, err := launches(fakeFns(pt), &pt.Config, pointGeometry(pt), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 {
		t.Fatalf("%d launches", len(ls))
	}
	if want := (cuda.LaunchAttrs{Cluster: [3]int{2, 2, 1}}); ls[0].attrs != want {
		t.Errorf("partial attributes %+v, want %+v", ls[0].attrs, want)
	}
	if want := (cuda.LaunchAttrs{Programmatic: true}); ls[1].attrs != want {
		t.Errorf("combine attributes %+v, want %+v", ls[1].attrs, want)
	}
	plain := p.Points[1]
	ls, err = launches(fakeFns(plain), &plain.Config, pointGeometry(plain), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range ls {
		if l.attrs != (cuda.LaunchAttrs{}) {
			t.Errorf("plain launch %d: attributes %+v, want none (cuLaunchKernel)", i, l.attrs)
		}
	}
}

// Every launch of a clustered point carries its cluster, the gates', the
// probes' and a captured graph's replays alike; a cluster the grid does
// not divide is refused at launch, as the driver does, and the point
// fails with the error.
func TestFakeCluster(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	p := fakePoint("cl", 100) // partial grid 8×4×2
	p.Launches[0].Cluster = [3]int{4, 2, 1}
	rec := run(t, b, p)
	if rec.Status != results.StatusOK {
		t.Fatalf("status %s: %s", rec.Status, rec.Error)
	}
	c := [3]int{4, 2, 1}
	if f.clusters[c] == 0 || f.clusters[c] != f.clusters[[3]int{}] || f.clusters[c] != f.pairs {
		t.Errorf("steps by cluster %v, %d steps: want every partial launch in %v clusters, every combine without", f.clusters, f.pairs, c)
	}
	if f.replayed[c] == 0 || f.replayed[c] != f.replayed[[3]int{}] {
		t.Errorf("replayed steps by cluster %v: want the graphs' partial launches in %v clusters", f.replayed, c)
	}

	f = newFakeDevice()
	b = fakeBackend(t, f)
	p = fakePoint("odd", 100)
	p.Launches[0].Cluster = [3]int{3, 1, 1}
	rec = run(t, b, p)
	if rec.Status != results.StatusError || f.pairs != 0 {
		t.Errorf("cluster 3 over grid 8: status %s after %d steps (%s), want an error before any", rec.Status, f.pairs, rec.Error)
	}
}
