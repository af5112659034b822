package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// printedInterval matches a printed number with its printed interval:
// "0.97× [0.95–0.99]" (a speedup) and "36.74 [36.67–36.83]" (a median in
// µs).
var printedInterval = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?)×? \[([0-9]+(?:\.[0-9]+)?)–([0-9]+(?:\.[0-9]+)?)\]`)

// Every point estimate the report prints lies inside the interval printed
// beside it, over every committed H200 result: a number and its interval
// come from one estimator, so rounding both the same way cannot separate
// them.
func TestPrintedEstimatesInsideIntervals(t *testing.T) {
	t.Parallel()
	rep, err := Build(allH200(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteMarkdown(&buf, nil, "."); err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(buf.String()) {
		for _, m := range printedInterval.FindAllStringSubmatch(line, -1) {
			x, _ := strconv.ParseFloat(m[1], 64)
			lo, _ := strconv.ParseFloat(m[2], 64)
			hi, _ := strconv.ParseFloat(m[3], 64)
			n++
			if !(lo <= x && x <= hi) {
				t.Errorf("%q: %g outside [%g, %g] in %s", m[0], x, lo, hi, strings.TrimSpace(line))
			}
		}
	}
	if n < 100 {
		t.Errorf("%d printed intervals in report.md, want the what-to-ship tables' hundreds", n)
	}
}
