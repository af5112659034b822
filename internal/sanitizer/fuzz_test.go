package sanitizer

import (
	"regexp"
	"strings"
	"testing"
)

// benign says, apart from Parse, which lines of a report may stand in a
// clean one: blank, indented (a backtrace), the banner, a note, the leak
// summary, or a summary of nothing found.
var benign = regexp.MustCompile(`^(|[ \t].*|COMPUTE-SANITIZER.*|Note:.*|LEAK SUMMARY.*|` +
	`ERROR SUMMARY: 0 errors?.*|RACECHECK SUMMARY: \d+ hazards? displayed \(0+ errors?, 0+ warnings?\).*)$`)

// FuzzParse: a line Parse does not know never leaves a report clean, and
// no line added to a report that found something makes it find nothing.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"Warning: Race reported between Write access at k+0x10 in k.cu:3",
		"Warning: the tool could not follow every launch",
		"Invalid __global__ read of size 4 bytes",
		"Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception.",
		"Target application returned an error",
		"RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)",
		"ERROR SUMMARY: 3 errors",
		"Note: all errors were printed",
		"    at attn_partial+0x1f0",
		"foo ERROR SUMMARY: 0 errors",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") {
			return
		}
		text := strings.TrimPrefix(strings.TrimLeft("========= "+line, "="), " ")
		for _, tool := range Tools {
			summary := "ERROR SUMMARY: 0 errors"
			if tool == Racecheck {
				summary = "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
			}
			clean := "========= COMPUTE-SANITIZER\n========= " + line + "\n========= " + summary + "\n"
			rep, err := Parse(tool, strings.NewReader(clean))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Clean() && !benign.MatchString(text) {
				t.Errorf("%s: a report with the line %q is clean: %+v", tool, text, rep)
			}
			found := "========= COMPUTE-SANITIZER\n========= Invalid __global__ read of size 4 bytes\n" +
				"========= ERROR SUMMARY: 1 error\n========= " + line + "\n"
			if rep, _ := Parse(tool, strings.NewReader(found)); !rep.Found() || rep.Clean() {
				t.Errorf("%s: a report that found an error, then the line %q: %+v", tool, text, rep)
			}
		}
	})
}
