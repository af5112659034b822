package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ktune/ktune/internal/sanitizer"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/sweep"
)

// sanitizeFlag is --sanitize: bare, every tool; =LIST, those tools.
type sanitizeFlag struct {
	tools []sanitizer.Tool
}

func (s *sanitizeFlag) String() string {
	if s == nil {
		return ""
	}
	return fmt.Sprint(s.tools)
}

func (s *sanitizeFlag) Set(v string) error {
	t, err := sanitizer.ParseTools(v)
	if err != nil {
		return err
	}
	s.tools = t
	return nil
}

// IsBoolFlag lets --sanitize stand alone.
func (s *sanitizeFlag) IsBoolFlag() bool { return true }

// checkSanitize refuses --sanitize where there are no workers to start
// under compute-sanitizer, and a --sanitize-jobs with nothing to spread.
func checkSanitize(s sanitizeFlag, jobs int, bs backendSpec) error {
	switch {
	case jobs < 1:
		return usageErrorf("--sanitize-jobs %d: at least one worker", jobs)
	case jobs != 1 && s.tools == nil:
		return usageErrorf("--sanitize-jobs without --sanitize: there are no sanitized runs to spread")
	case s.tools == nil:
		return nil
	}
	if bs.replay != nil || bs.inProcess {
		return usageErrorf("--sanitize runs gate points in worker processes under compute-sanitizer: drop --in-process and --backend replay")
	}
	return nil
}

// sanitize runs the gate points of todo under compute-sanitizer
// (sweep.Sanitize) and returns the sweep's backend wrapped with the
// verdicts; the logs go to DIR/sanitize.
func sanitize(ctx context.Context, stderr io.Writer, s sanitizeFlag, jobs int, dir string, bs backendSpec, b plan.Backend, todo []*plan.Point) (plan.Backend, error) {
	bin, err := sanitizer.Binary(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("--sanitize: %w", err)
	}
	command, err := workerCommand("", bs.verbose, false)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "sanitize: the first point of each compiled kernel under %v (%s), logs in %s\n",
		s.tools, bin, filepath.Join(dir, "sanitize"))
	verdicts, err := sweep.Sanitize(ctx, todo, sweep.SanitizeOptions{
		Tools: s.tools, Binary: bin, Dir: filepath.Join(dir, "sanitize"), Worker: command, Devices: bs.devices, Log: stderr,
		Jobs: jobs,
	})
	if err != nil {
		return nil, interruptedOr(ctx, fmt.Errorf("--sanitize: %w", err))
	}
	return sweep.Sanitized(b, verdicts), nil
}
