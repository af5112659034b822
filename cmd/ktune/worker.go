package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
	"github.com/ktune/ktune/sweep"
)

func init() {
	register(&command{
		name:    "worker",
		summary: "run points for a sweep over stdin/stdout (started by ktune sweep)",
		hidden:  true,
		run: func(stdout, stderr io.Writer, args []string) error {
			return runWorker(context.Background(), os.Stdin, stdout, stderr, args, openProbe)
		},
	})
}

const workerUsage = `Usage: ktune worker --device N [--sass DIR] [--cache DIR] [--energy] [-v]

Worker is the process in which 'ktune sweep' runs its points, one worker
per GPU, so that a kernel that faults, traps or hangs takes down only its
worker: the sweep records the point as fault or timeout, starts a fresh
worker and goes on. It opens the CUDA device once, then answers JSON
requests on stdin with JSON lines on stdout until stdin closes. It is not
meant to be run by hand; the protocol is described in sweep/worker.go.

Example (what the sweep runs for --devices 0,1):

  $ ktune worker --device 1 --sass out/slice/sass

Flags:
`

// workerHangMargin is how long past a point's limit a worker waits before
// exiting on its own. The sweep kills a hung worker a few seconds past the
// limit; this only matters when the sweep itself was killed, and an
// orphaned worker spinning in a kernel would otherwise hold the GPU.
const workerHangMargin = 60 * time.Second

func runWorker(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string,
	open func(probe.Options) (plan.Backend, error)) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	device := fs.Int("device", 0, "CUDA device `N`")
	sass := fs.String("sass", "", "copy every loaded CUBIN into `DIR`")
	energy := fs.Bool("energy", false, "record the board's energy per step beside the hot and graph probes")
	cache := fs.String("cache", "", "compiled-kernel cache `DIR` (default $XDG_CACHE_HOME/ktune, shared by all workers)")
	verbose := fs.Bool("v", false, "write the backend's log to stderr")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), workerUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return withCode(exitUsage, errSilent)
	}
	if fs.NArg() > 0 {
		return usageErrorf("worker takes no arguments, got %q (ktune help worker)", fs.Args())
	}
	var blog io.Writer = io.Discard
	if *verbose {
		blog = stderr
	}
	opts := sweep.ServeOptions{
		HangAfter: workerHangMargin,
		Hung: func(p *plan.Point) {
			fmt.Fprintf(stderr, "ktune worker: point %s (%s) has run %gs past its limit with no one to stop it; exiting\n",
				p.Hash, p.Config.Variant, workerHangMargin.Seconds())
			os.Exit(exitError)
		},
	}
	err := sweep.Serve(ctx, func() (plan.Backend, error) {
		b, err := open(probe.Options{Device: *device, SASSDir: *sass, CacheDir: *cache, Log: blog, Energy: *energy})
		if err != nil {
			return nil, fmt.Errorf("opening CUDA device %d: %w", *device, err)
		}
		return b, nil
	}, stdin, stdout, opts)
	if err != nil {
		return fmt.Errorf("worker on device %d: %w", *device, err)
	}
	return nil
}

// workerCommand returns the command factory of a sweep's pool: this same
// binary run as `ktune worker` for each device.
func workerCommand(sassDir string, verbose, energy bool) (func(int) *exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the ktune binary to start workers from: %w", err)
	}
	return func(device int) *exec.Cmd {
		args := []string{"worker", "--device", strconv.Itoa(device)}
		if sassDir != "" {
			args = append(args, "--sass", sassDir)
		}
		if verbose {
			args = append(args, "-v")
		}
		if energy {
			args = append(args, "--energy")
		}
		cmd := exec.Command(exe, args...)
		cmd.Env = os.Environ()
		return cmd
	}, nil
}
