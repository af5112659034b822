package main

import (
	"bytes"
	"strings"
	"testing"
)

func feed(s *summary, events ...event) {
	for _, e := range events {
		s.add(e)
	}
	s.finish()
}

// TestSkipReasons: a skipped test is listed with the words it printed,
// without go test's framing, and a passing run is not failed.
func TestSkipReasons(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out)
	feed(s,
		event{Action: "start", Package: "p"},
		event{Action: "output", Package: "p", Test: "TestGPU", Output: "=== RUN   TestGPU\n"},
		event{Action: "output", Package: "p", Test: "TestGPU", Output: "    gpu_test.go:23: no usable GPU here: cuInit: CUDA_ERROR_NO_DEVICE (100)\n"},
		event{Action: "output", Package: "p", Test: "TestGPU", Output: "--- SKIP: TestGPU (0.00s)\n"},
		event{Action: "skip", Package: "p", Test: "TestGPU"},
		event{Action: "pass", Package: "p", Test: "TestCPU"},
		event{Action: "pass", Package: "p", Elapsed: 1.5},
	)
	if s.failed {
		t.Errorf("a run with a pass and a skip is failed:\n%s", out.String())
	}
	for _, want := range []string{"p TestGPU: gpu_test.go:23: no usable GPU here: cuInit: CUDA_ERROR_NO_DEVICE (100)\n", "1 passed, 0 failed, 1 skipped", "ok   p"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestFailures: a failed test prints its output; a package that started
// and never ended (a crash) and a build failure each fail the run.
func TestFailures(t *testing.T) {
	for _, c := range []struct {
		name   string
		events []event
		want   string
	}{
		{"failed test", []event{
			{Action: "start", Package: "p"},
			{Action: "output", Package: "p", Test: "TestX", Output: "    x_test.go:9: got 2, want 3\n"},
			{Action: "fail", Package: "p", Test: "TestX"},
			{Action: "fail", Package: "p"},
		}, "got 2, want 3"},
		{"no end", []event{{Action: "start", Package: "p"}}, "did not finish"},
		{"build", []event{{Action: "build-output", Output: "p/x.go:1:1: syntax error\n"}, {Action: "build-fail"}}, "syntax error"},
	} {
		var out bytes.Buffer
		s := newSummary(&out)
		feed(s, c.events...)
		if !s.failed {
			t.Errorf("%s: not failed:\n%s", c.name, out.String())
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.name, c.want, out.String())
		}
	}
}
