package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

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
		fmt.Fprintf(stdout, "%-14s MISSING: %v\n", what, err)
	}

	drv, err := cuda.Open()
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
