package buildinfo

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make build` records the commit in the binary in every checkout, a git
// worktree included (where the go command cannot stamp it): `ktune
// version` names the revision git reports.
func TestMakeBuildStampsRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ktune")
	}
	for _, tool := range []string{"make", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	root := "../.."
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "ktune")
	if out, err := exec.Command("make", "-C", root, "--no-print-directory", "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("ktune version: %v", err)
	}
	if want := "revision " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("ktune version does not say %q:\n%s", want, out)
	}
}
