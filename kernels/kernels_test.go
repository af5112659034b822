package kernels

import (
	"regexp"
	"slices"
	"testing"
)

// TestUtil holds Util to util.cu: every kernel the file defines is
// named there, each extern "C" (the sanitizer excludes them by exact
// symbol, which a C++ kernel's mangling would change), and no name is
// listed that the file does not define.
func TestUtil(t *testing.T) {
	text, err := Read("util.cu")
	if err != nil {
		t.Fatal(err)
	}
	var defined []string
	for _, m := range regexp.MustCompile(`(?m)^(.*)__global__\s+void\s+(\w+)\s*\(`).FindAllStringSubmatch(text, -1) {
		if !regexp.MustCompile(`extern\s+"C"`).MatchString(m[1]) {
			t.Errorf("util.cu's %s is not extern \"C\": its symbol is mangled, and the sanitizer's exclusion by name misses it", m[2])
		}
		defined = append(defined, m[2])
	}
	want := Util()
	slices.Sort(defined)
	slices.Sort(want)
	if !slices.Equal(defined, want) {
		t.Errorf("util.cu defines %v; Util lists %v", defined, want)
	}
}

// TestMergeArea: every kernel that runs mma_block declares the merge area
// it passes through mma_merge_area, never by hand: with KVSM, mma_block
// finds its staging buffers at sm_m's address (mma_stage_area), which
// only mma_merge_area's union makes large enough.
func TestMergeArea(t *testing.T) {
	entries, err := FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		text, err := Read(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`\bmma_block\(MMA_ARGS, sm_m, sm_l, sm_o\)`).MatchString(text) {
			continue
		}
		n++
		if !regexp.MustCompile(`(?m)^\s+mma_merge_area;$`).MatchString(text) {
			t.Errorf("%s runs mma_block without declaring mma_merge_area", e.Name())
		}
		if regexp.MustCompile(`__shared__[^;]*\bsm_(m|l|o)\[`).MatchString(text) {
			t.Errorf("%s declares sm_m, sm_l or sm_o itself", e.Name())
		}
	}
	if n < 4 {
		t.Errorf("%d kernels run mma_block, want mma, mmaf, mmafw and mmac at least", n)
	}
}
