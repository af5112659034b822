package probe

import "testing"

// TestLogHead: a compile failure names its first log lines; "the log is
// in compile.log" read as a file that does not exist.
func TestLogHead(t *testing.T) {
	log := "\nkernel.cu(12): error: identifier \"x\" is undefined\n\nkernel.cu(13): error: expected a \";\"\nkernel.cu(14): error: too many\nkernel.cu(15): error: more\n"
	want := `: kernel.cu(12): error: identifier "x" is undefined; kernel.cu(13): error: expected a ";"; kernel.cu(14): error: too many`
	if got := logHead(log, 3); got != want {
		t.Errorf("logHead = %q\nwant %q", got, want)
	}
	if got := logHead("  \n", 3); got != "" {
		t.Errorf("empty log: %q", got)
	}
}
