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
