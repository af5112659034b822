package plan

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The data flows one way: spec → plan → (probe | sweep | search) →
// report. This pins the package edges that once ran the wrong way: the
// CUDA backend depended on the driver (probe → sweep), and the spec format
// on ktune's list of kernels (spec → variants).
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages")
	}
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", "github.com/ktune/ktune/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, c := range []struct{ pkg, forbidden string }{
		{"probe", "sweep"}, {"probe", "search"}, {"probe", "report"},
		{"internal/spec", "variants"}, {"internal/spec", "plan"},
		{"plan", "sweep"}, {"plan", "probe"}, {"search", "probe"},
		{"report", "plan"}, {"report", "sweep"},
	} {
		if slices.Contains(deps(c.pkg), "github.com/ktune/ktune/"+c.forbidden) {
			t.Errorf("%s depends on %s", c.pkg, c.forbidden)
		}
	}
}
