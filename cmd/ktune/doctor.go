package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/probe"
)

func init() {
	register(&command{
		name:    "doctor",
		summary: "check the driver, the GPU and NVRTC, and measure the read bandwidth",
		run:     runDoctor,
	})
}

const doctorUsage = `Usage:
  ktune doctor [-device N] [-cache DIR]

Doctor checks every piece a sweep needs and prints what it found: the CUDA
driver (libcuda.so.1) and its version, the GPU (name, index, UUID, compute
capability, SMs, L2, memory, default clocks), the runtime compiler
(libnvrtc) with its path and version, and then measures what a sweep
measures once per run: the streaming read bandwidth, the roof that every
GB/s figure of a report is a percentage of, and the SM clock.

When a piece is missing, doctor says exactly what was looked for, where,
and why loading failed, and exits with status 1. Run it first on a new
machine, and whenever a sweep cannot open the device.

Exit status: 0 every piece was found and measured, 1 a piece is missing
(each is named, with the commands that work without it), 2 a bad
command line.

Examples:
  $ ktune doctor
  $ ktune doctor -device 1
  $ LD_LIBRARY_PATH=/usr/local/cuda/lib64 ktune doctor

Flags:
`

func runDoctor(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, doctorUsage)
		fs.PrintDefaults()
	}
	device := fs.Int("device", 0, "CUDA device `N`")
	cacheDir := fs.String("cache", "", "CUBIN cache `DIR` (default $XDG_CACHE_HOME/ktune or ~/.cache/ktune; \"off\" disables it)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return withCode(exitUsage, err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageErrorf("doctor takes no arguments, got %q", fs.Args())
	}

	problems := 0
	missing := func(what string, err error) {
		problems++
		writeMissing(stdout, what, err)
	}

	drv, err := cuda.Open()
	driverOK := err == nil
	if err != nil {
		missing("driver", err)
	} else {
		maj, min, err := drv.Version()
		if err != nil {
			missing("driver", fmt.Errorf("reading the driver version: %w", err))
		} else {
			fmt.Fprintf(stdout, "%-14s CUDA %d.%d (libcuda.so.1)\n", "driver", maj, min)
		}
		n, err := drv.DeviceCount()
		switch {
		case err != nil:
			missing("devices", fmt.Errorf("counting devices: %w", err))
		case n == 0:
			missing("devices", errors.New("the driver sees no CUDA device"))
		default:
			fmt.Fprintf(stdout, "%-14s %d\n", "devices", n)
			if *device < 0 || *device >= n {
				missing("device", fmt.Errorf("device %d requested, %d present", *device, n))
			}
		}
	}
	nv, err := cuda.OpenNVRTC()
	nvrtcOK := err == nil
	if err != nil {
		missing("nvrtc", err)
	} else {
		maj, min, err := nv.Version()
		if err != nil {
			missing("nvrtc", fmt.Errorf("reading the NVRTC version: %w", err))
		} else {
			fmt.Fprintf(stdout, "%-14s %d.%d (%s)\n", "nvrtc", maj, min, nv.Path())
		}
	}
	if problems > 0 {
		writeWorksHere(stdout, driverOK, nvrtcOK)
		return fmt.Errorf("doctor: %d problem(s) found; a sweep cannot run on this machine", problems)
	}

	b, err := probe.New(probe.Options{Device: *device, CacheDir: *cacheDir})
	if err != nil {
		return fmt.Errorf("doctor: opening device %d: %w", *device, err)
	}
	defer b.Close()
	env, err := b.Env(context.Background())
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	p := func(name, format string, args ...any) {
		fmt.Fprintf(stdout, "%-14s %s\n", name, fmt.Sprintf(format, args...))
	}
	p("gpu", "%s (index %d)", env.Device, env.DeviceIndex)
	p("uuid", "%s", env.UUID)
	p("arch", "%s", env.Arch)
	p("SMs", "%d", env.SMs)
	p("L2", "%.1f MiB", float64(env.L2Bytes)/(1<<20))
	p("memory", "%.1f GiB", float64(env.MemBytes)/(1<<30))
	p("SM clock", "%.0f MHz default", env.ClockMHz)
	if mhz, err := b.SMClockMHz(); err != nil {
		p("", "measuring it failed: %v", err)
	} else {
		p("", "%.0f MHz measured now", mhz)
	}
	p("memory clock", "%.0f MHz", env.MemClockMHz)
	p("read BW", "%.1f GB/s (streaming float4 read, median of 10)", env.ReadBWGBps)
	p("host", "%s", env.Host)
	return nil
}

// doctorWidth bounds doctor's lines: what it found is read on a terminal.
const doctorWidth = 80

// writeMissing says what is missing and why, in short lines: a library's
// every try on a line of its own, then the hint; a device the driver
// cannot use named as such (the library loads; cuInit refuses).
func writeMissing(w io.Writer, what string, err error) {
	var le *cuda.LibraryError
	switch {
	case errors.As(err, &le):
		fmt.Fprintf(w, "%-14s MISSING: %s not found\n", what, le.Lib)
		for _, t := range le.Tried {
			writeWrapped(w, "tried "+t)
		}
		writeWrapped(w, le.Hint)
	case what == "driver" && cuda.NoUsableDevice(err):
		fmt.Fprintf(w, "%-14s MISSING: a usable device (libcuda.so.1 loads)\n", what)
		writeWrapped(w, err.Error())
	default:
		fmt.Fprintf(w, "%-14s MISSING:\n", what)
		writeWrapped(w, err.Error())
	}
}

// writeWrapped prints text indented under doctor's names, broken at spaces
// into lines of at most doctorWidth (a word longer than that stays whole).
func writeWrapped(w io.Writer, text string) {
	const indent = "                 "
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(indent)+len(line)+1+len(word) > doctorWidth {
			fmt.Fprintf(w, "%s%s\n", indent, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		fmt.Fprintf(w, "%s%s\n", indent, line)
	}
}

// writeWorksHere lists what runs without a sweep's GPU: everything that
// reads a spec or recorded results, and check where NVRTC loads.
func writeWorksHere(w io.Writer, driverOK, nvrtcOK bool) {
	fmt.Fprintln(w, "\nWhat works on this machine:")
	rows := [][2]string{{"ktune plan SPEC", "the points a spec expands to"}}
	if nvrtcOK {
		rows = append(rows, [2]string{"ktune check SPEC...", "compile every kernel with NVRTC, no GPU"})
	} else {
		rows = append(rows, [2]string{"(ktune check SPEC...)", "needs NVRTC (above: what to install)"})
	}
	rows = append(rows,
		[2]string{"ktune report RESULTS... -o DIR", "tables, plots and report.md"},
		[2]string{"ktune compare OLD NEW", "per-point change with a significance test"},
		[2]string{"ktune gate --candidate NAME R...", "the landing decision, from recorded results"},
		[2]string{"ktune tune --from RESULTS -o DIR", "the dispatch table"},
		[2]string{"ktune export, ktune merge", "benchstat format; join shards"},
		[2]string{"ktune sweep SPEC -o DIR --backend replay --replay-from R", ""},
		[2]string{"", "a dry run from recorded results (replay)"},
	)
	for _, r := range rows {
		if r[1] == "" {
			fmt.Fprintf(w, "  %s\n", r[0])
			continue
		}
		fmt.Fprintf(w, "  %-34s %s\n", r[0], r[1])
	}
	if !driverOK {
		fmt.Fprintln(w, "sweep, tune SPEC, profile and doctor's measurements need a GPU.")
	}
}
