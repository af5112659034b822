package probe

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
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

// A launch whose shared memory size is a module variable runs with the
// variable's value, read after the load and before any launch; a
// variable the module lacks, or of no integer size, fails the point
// before any launch.
func TestSharedFromSymbol(t *testing.T) {
	le := func(b ...byte) []byte { return b }
	for _, c := range []struct {
		name   string
		bytes  []byte
		shared int
		fails  string
	}{
		{"int", le(0x00, 0x30, 0, 0), 12288, ""},
		{"size_t", le(0x00, 0x10, 0, 0, 0, 0, 0, 0), 4096, ""},
		{"missing", nil, 0, `module variable "split_smem"`},
		{"short", le(1, 2), 0, "the variable is 2 bytes"},
		{"negative", le(0xff, 0xff, 0xff, 0xff), 0, "-1 bytes of shared memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models["k"] = fakeModel{}
			if c.bytes != nil {
				f.symbols = map[string][]byte{"split_smem": c.bytes}
			}
			b := fakeBackend(t, f)
			p := fakePoint("k", 100)
			p.Launches[0].SharedSymbol = "split_smem"
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec, err := b.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if c.fails != "" {
				if rec.Status != results.StatusError || !strings.Contains(rec.Error, c.fails) || f.calls["launch"] != 0 {
					t.Errorf("status %s, error %q, %d launches; want an error saying %q before any launch", rec.Status, rec.Error, f.calls["launch"], c.fails)
				}
				return
			}
			if rec.Status != results.StatusOK || rec.Config.SharedBytes != c.shared {
				t.Fatalf("status %s (%s), recorded shared %d; want ok with %d", rec.Status, rec.Error, rec.Config.SharedBytes, c.shared)
			}
			if len(f.lastSteps) == 0 || f.lastSteps[0].Shared != c.shared || p.Launches[0].Shared != 0 {
				t.Errorf("launched with shared %v (plan's %d); want %d and the plan untouched", f.lastSteps, p.Launches[0].Shared, c.shared)
			}
		})
	}
}
