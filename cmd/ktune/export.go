package main

import (
	"flag"
	"io"

	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/report"
)

func init() {
	register(&command{
		name:    "export",
		summary: "write results in another format (the Go benchmark format, for benchstat)",
		run:     runExport,
	})
}

const exportUsage = `Usage: ktune export --format gobench RESULTS...

Export writes the records of RESULTS (files or sweep directories) to
standard output in another format. The only format is gobench, the Go
benchmark format: configuration lines ("device: NVIDIA H200") and one line
per sample,

  BenchmarkAttn/variant=d2/shape=7b/SPLITS=32/NR=4/nkv=32768/probe=cold 1 19400 ns/op

so that benchstat and the rest of golang.org/x/perf read ktune results.
Only what makes two runs incomparable is a configuration line (device,
arch, driver, nvrtc): benchstat compares nothing across configurations.
What changes from run to run on one machine — the ktune build, the
measured read bandwidth — is written on a "# ktune …" line, which
benchstat ignores, so two runs on one GPU compare with plain
'benchstat old.txt new.txt'. Points without samples (failed gates) are
left out, and so are records that are not evidence (no samples, a sample
that is not a finite positive time or is below the point's physical
floor, a status its gates contradict), each
warned about on stderr with a count. Records the replay backend served
keep their mark: they are written under a "provenance: replayed"
configuration line, so benchstat never compares them with measurements.

Examples:
  $ ktune export --format gobench out/before > before.txt
  $ ktune export --format gobench out/after > after.txt
  $ benchstat before.txt after.txt

Exit status: 0 the records were written, 1 a results file could not be
read, holds no evidence or the output could not be written, 2 a bad
command line (an unknown --format).

Flags:
`

func runExport(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "gobench", "output `FORMAT`: gobench")
	pos, help, err := parseArgs(fs, args, exportUsage)
	if help || err != nil {
		return err
	}
	if *format != "gobench" {
		return usageErrorf("export: unknown format %q (the only one is gobench)", *format)
	}
	if len(pos) == 0 {
		return usageErrorf("export wants at least one RESULTS file (ktune help export)")
	}
	set, err := loadEvidence(stderr, pos, evidence.Options{})
	if err != nil {
		return err
	}
	return report.WriteGoBench(stdout, set.Records)
}
