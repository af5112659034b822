package main

import (
	"regexp"
	"strings"
	"testing"
)

// flagLine is a flag's line in a usage: "  -name PLACEHOLDER" (a flag that
// takes a value) or "  -name" (a bool).
var flagLine = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)(?: (\S+))?(?:\t|$)`)

// TestHelpPlaceholders: every flag that takes a value names the kind of
// value in capitals (-backend NAME, -o DIR), never a literal that reads as
// the one value to type (-backend cuda) or Go's type name (-j int).
func TestHelpPlaceholders(t *testing.T) {
	placeholder := regexp.MustCompile(`^[A-Z][A-Z0-9_=/,.|-]*$`)
	for name, c := range commands {
		if c.hidden {
			continue
		}
		stdout, _, _ := runCmd("help", name)
		lines := flagLine.FindAllStringSubmatch(stdout, -1)
		for _, m := range lines {
			if m[2] != "" && !placeholder.MatchString(m[2]) {
				t.Errorf("ktune help %s: -%s %s: the placeholder does not name a kind of value in capitals", name, m[1], m[2])
			}
		}
		if strings.Contains(stdout, "Flags:") && len(lines) == 0 {
			t.Errorf("ktune help %s: no flag lines found; the pattern no longer reads the usage", name)
		}
	}
}

// TestHelpExitStatus: every command's help says what its exit codes mean.
func TestHelpExitStatus(t *testing.T) {
	for name, c := range commands {
		if c.hidden {
			continue
		}
		stdout, _, _ := runCmd("help", name)
		if !strings.Contains(stdout, "Exit status") && !strings.Contains(stdout, "Exit codes") {
			t.Errorf("ktune help %s says nothing of its exit status", name)
		}
	}
	if stdout, _, _ := runCmd("help", "help"); !strings.Contains(stdout, "Exit status") {
		t.Errorf("ktune help help says nothing of its exit status:\n%s", stdout)
	}
}

// TestHelpHelp: help documents itself and exits 0; it still refuses an
// unknown command.
func TestHelpHelp(t *testing.T) {
	stdout, stderr, code := runCmd("help", "help")
	if code != exitOK || stderr != "" || !strings.Contains(stdout, "Usage: ktune help") {
		t.Errorf("help help: exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	for _, args := range [][]string{{"help", "help", "sweep"}, {"help", "sweep", "gate"}, {"help", "--long"}} {
		if _, _, code := runCmd(args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestHelpSweepLong: help sweep is short and points at --long, which
// holds the rest of the manual; both spellings of help print it.
func TestHelpSweepLong(t *testing.T) {
	const deep = "KTUNE_REPLAY_STOP_AT" // from the replay section, deep in the manual
	short, _, code := runCmd("help", "sweep")
	if code != exitOK || strings.Contains(short, deep) || !strings.Contains(short, "ktune help sweep --long") {
		t.Errorf("help sweep: exit %d, long text in it or no pointer to --long:\n%s", code, short)
	}
	if n := strings.Count(short, "\n"); n > 80 {
		t.Errorf("help sweep is %d lines, want at most 80", n)
	}
	for _, args := range [][]string{{"help", "sweep", "--long"}, {"sweep", "-h", "--long"}} {
		long, _, code := runCmd(args...)
		if code != exitOK || !strings.Contains(long, deep) || !strings.HasPrefix(long, short[:strings.Index(short, "Flags:")]) {
			t.Errorf("%q: exit %d, no %q or not the short form first", args, code, deep)
		}
	}
	// A command without a long form does not point at one.
	if out, _, _ := runCmd("help", "version"); strings.Contains(out, "--long") {
		t.Errorf("help version points at a --long it does not have:\n%s", out)
	}
}
