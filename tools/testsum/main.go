// Command testsum reads `go test -json` on standard input and prints what a
// person waiting on `make test` needs: one line per package as it finishes
// (ok or FAIL, with its time), the whole output of every failing test, and
// at the end the count of tests run, passed, failed and skipped, with each
// skipped test's reason (a GPU test names the driver's: why no device can
// be used here). It exits 1 when a test or a package failed, or when the
// input ends with a package that never finished (a crashed go test).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// An event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// A skip is a skipped test and the reason it printed.
type skip struct {
	pkg, test, reason string
}

type summary struct {
	out      io.Writer
	output   map[[2]string][]string // (package, test) → its output lines; test "" is the package's own
	started  map[string]bool        // packages with a start event and no end yet
	skips    []skip
	counts   map[string]int // pass, fail, skip of tests
	failed   bool
	packages int
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, output: map[[2]string][]string{}, started: map[string]bool{}, counts: map[string]int{}}
}

func (s *summary) add(e event) {
	key := [2]string{e.Package, e.Test}
	switch e.Action {
	case "start":
		s.started[e.Package] = true
	case "output":
		s.output[key] = append(s.output[key], e.Output)
	case "build-output": // a package that does not compile: go build's own words
		fmt.Fprint(s.out, e.Output)
	case "build-fail":
		s.failed = true
	case "pass", "fail", "skip":
		if e.Test != "" {
			s.counts[e.Action]++
			switch e.Action {
			case "fail":
				s.failed = true
				fmt.Fprintf(s.out, "--- FAIL: %s %s\n%s", e.Package, e.Test, strings.Join(s.output[key], ""))
			case "skip":
				s.skips = append(s.skips, skip{e.Package, e.Test, reason(s.output[key])})
			}
			delete(s.output, key)
			return
		}
		delete(s.started, e.Package)
		s.packages++
		status := "ok  "
		if e.Action == "fail" {
			status = "FAIL"
			s.failed = true
			fmt.Fprint(s.out, strings.Join(s.output[key], ""))
		} else if e.Action == "skip" {
			status = "--  " // no test files
		}
		fmt.Fprintf(s.out, "%s %-52s %6.1fs\n", status, e.Package, e.Elapsed)
		delete(s.output, key)
	}
}

// reason is what a skipped test printed, less go test's own framing lines.
func reason(lines []string) string {
	var kept []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) == 0 {
		return "(no reason given)"
	}
	return strings.Join(kept, " ")
}

func (s *summary) finish() {
	for pkg := range s.started {
		s.failed = true
		fmt.Fprintf(s.out, "FAIL %s: no result (the test binary did not finish)\n", pkg)
	}
	fmt.Fprintf(s.out, "\n%d packages; tests: %d passed, %d failed, %d skipped\n",
		s.packages, s.counts["pass"], s.counts["fail"], s.counts["skip"])
	sort.Slice(s.skips, func(i, j int) bool {
		if s.skips[i].pkg != s.skips[j].pkg {
			return s.skips[i].pkg < s.skips[j].pkg
		}
		return s.skips[i].test < s.skips[j].test
	})
	if len(s.skips) > 0 {
		fmt.Fprintln(s.out, "skipped, and why:")
	}
	for _, k := range s.skips {
		const max = 200
		r := k.reason
		if len(r) > max {
			r = r[:max] + "…"
		}
		fmt.Fprintf(s.out, "  %s %s: %s\n", strings.TrimPrefix(k.pkg, "github.com/ktune/ktune/"), k.test, r)
	}
}

func main() {
	s := newSummary(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// go test's own diagnostics (build errors) are not JSON.
			s.failed = true
			fmt.Fprintln(s.out, sc.Text())
			continue
		}
		s.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testsum: reading go test -json: %v\n", err)
		os.Exit(1)
	}
	s.finish()
	if s.failed {
		os.Exit(1)
	}
}
