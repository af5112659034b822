package probe

import (
	"reflect"
	"testing"

	"github.com/ktune/ktune/plan"
)

// twoFilePoint is a step whose partial comes from the variant's CUBIN
// and whose combine comes from a PTX of its own.
func twoFilePoint() *plan.Point {
	return &plan.Point{
		Source: plan.Source{Name: "partial.cubin", Entries: []string{"part"}, Artifact: []byte("\x7fELF p"), ArtifactKind: "cubin", ArtifactSHA256: "aa",
			Modules: []plan.Module{{Path: "/b/comb.ptx", Kind: "ptx", Image: []byte(".version 8.0\n"), SHA256: "bb", Entries: []string{"comb"}}}},
		Launches: []plan.Launch{{Entry: "part", Block: [3]int{128, 1, 1}, Shared: 8704}, {Entry: "comb", Block: [3]int{64, 1, 1}}},
	}
}

// The fresh-module gate loads every file of the step again, each entry
// from its own file.
func TestFileImages(t *testing.T) {
	p := twoFilePoint()
	imgs := fileImages(p.Source, &build{cubin: p.Source.Artifact})
	if len(imgs) != 2 {
		t.Fatalf("%d images, want the CUBIN and the PTX", len(imgs))
	}
	if string(imgs[0].image) != "\x7fELF p" || !reflect.DeepEqual(imgs[0].entries, []string{"part"}) || imgs[0].symbol["part"] != "part" {
		t.Errorf("first image %+v, want part from the CUBIN", imgs[0])
	}
	if imgs[1].name != "comb.ptx" || string(imgs[1].image) != ".version 8.0\n" || !reflect.DeepEqual(imgs[1].entries, []string{"comb"}) {
		t.Errorf("second image %+v, want comb from comb.ptx", imgs[1])
	}
	if s := moduleSource(plan.Module{Path: "/b/x.cubin", Kind: "cubin", Missing: true}); s.Missing != "/b/x.cubin" {
		t.Errorf("a missing module's source %+v does not say it is missing", s)
	}
}

// ktune check reads each file for the launches taken from it.
func TestCheckJobsPerFile(t *testing.T) {
	ks := checkJobs([]CheckSet{{Points: []*plan.Point{twoFilePoint()}}}, "sm_90", "12.4")
	if len(ks) != 2 {
		t.Fatalf("%d kernels checked, want one per file", len(ks))
	}
	want := [][]string{{"part"}, {"comb"}}
	for i, k := range ks {
		var got []string
		for _, e := range k.Entries {
			got = append(got, e.Entry)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("kernel %d (%s): entries %v, want %v", i, k.Source, got, want[i])
		}
	}
	if ks[0].Entries[0].Threads != 128 || ks[0].Entries[0].DynamicShared != 8704 || ks[1].Artifact != "ptx" {
		t.Errorf("checks %+v / %+v: want the partial's launch on the CUBIN and the PTX's own", ks[0].Entries, ks[1])
	}
}
