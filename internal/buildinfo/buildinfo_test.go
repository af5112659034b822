package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	main := debug.Module{Path: "github.com/ktune/ktune", Version: "(devel)"}
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		rev, mod string
		stamp    string
	}{
		{"go command stamped", []debug.BuildSetting{{Key: "vcs.revision", Value: "2244491a3b1c0123456789abcdef0123456789ab"}, {Key: "vcs.modified", Value: "true"}},
			"ffffffffffff", "false", "(devel)+2244491a3b1c-dirty"},
		{"linker fallback", nil, "39043e1a2b3c4d5e6f", "false", "(devel)+39043e1a2b3c"},
		{"linker fallback, dirty", nil, "39043e1a2b3c4d5e6f", "true", "(devel)+39043e1a2b3c-dirty"},
		{"nothing known", nil, "", "", "(devel)"},
	} {
		in := from(&debug.BuildInfo{Main: main, GoVersion: "go1.26.8", Settings: tc.settings}, tc.rev, tc.mod)
		if got := in.Stamp(); got != tc.stamp {
			t.Errorf("%s: stamp %q, want %q", tc.name, got, tc.stamp)
		}
		if s := in.String(); !strings.Contains(s, "go go1.26.8") || !strings.Contains(s, "module github.com/ktune/ktune") {
			t.Errorf("%s: version text\n%s", tc.name, s)
		}
	}
}
