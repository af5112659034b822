package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// WriteGoBench writes recs in the Go benchmark format, one line per
// sample, so that benchstat and the rest of golang.org/x/perf read ktune
// results:
//
//	device: NVIDIA H200
//	BenchmarkAttn/variant=d2/shape=7b/SPLITS=32/NR=4/nkv=32768/probe=cold 1 19400 ns/op
//
// Configuration lines name what makes two runs incomparable — device,
// arch, driver, nvrtc — and are written before the first record and again
// whenever they change. benchstat puts results of different configuration
// into different tables and compares nothing across them, so what differs
// from run to run on the same machine (the measured read bandwidth, the
// ktune build being tested) is not configuration: it goes on a "#" line,
// which the format ignores and people read.
//
// Records without samples (failed gates) are skipped: the format has no
// way to say "not measured".
func WriteGoBench(w io.Writer, recs []results.Record) error {
	ew := &errWriter{w: w}
	// Measured is the provenance of a file without the line.
	cfg := map[string]string{"provenance": "measured"}
	run := ""
	for i := range recs {
		r := &recs[i]
		if len(r.Probes) == 0 {
			continue
		}
		// A replayed record is another run's numbers: a configuration of
		// its own, so that benchstat compares it with nothing measured.
		prov := "measured"
		if results.IsReplayed(r) {
			prov = "replayed"
		}
		for _, kv := range [][2]string{
			{"device", r.Env.Device}, {"arch", r.Env.Arch}, {"driver", r.Env.Driver}, {"nvrtc", r.Env.NVRTC},
			{"provenance", prov},
		} {
			if cfg[kv[0]] != kv[1] {
				cfg[kv[0]] = kv[1]
				ew.printf("%s: %s\n", kv[0], kv[1])
			}
		}
		if note := fmt.Sprintf("# ktune %s, measured read bandwidth %s GB/s", dash(r.Env.Ktune), fmtFloat(r.Env.ReadBWGBps)); note != run {
			run = note
			ew.printf("%s\n", note)
		}
		name := benchName(r)
		for _, m := range r.Probes {
			for _, ns := range m.SamplesNS {
				ew.printf("%s/probe=%s 1 %s ns/op\n", name, nameValue(string(m.Probe)), fmtFloat(ns))
			}
		}
	}
	if ew.err != nil {
		return fmt.Errorf("writing Go benchmark format: %w", ew.err)
	}
	return nil
}

// fmtFloat is v to a tenth, in plain decimal (benchfmt reads values with
// strconv.ParseFloat): a nanosecond timed by CUDA events, or a GB/s, has
// nothing below that but the float noise of unit conversions
// (7712.000049650669 is 7712).
func fmtFloat(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func benchName(r *results.Record) string {
	var b strings.Builder
	b.WriteString("BenchmarkAttn/variant=" + nameValue(r.Config.Variant))
	// The shape's label alone may name two shapes (a batch-1 and a batch-16
	// "7b"); batch and capacity make the name unique without depending on
	// the other records of the file, so two exported runs still match.
	sh := r.Config.Shape
	b.WriteString("/shape=" + nameValue(ShapeLabel(sh)) + "/batch=" + strconv.Itoa(sh.Batch) + "/capacity=" + strconv.Itoa(sh.Capacity))
	b.WriteString("/" + abi.DefineSplits + "=" + strconv.Itoa(r.Config.Splits))
	for _, d := range r.Config.Defines.Sorted().Own().Without(abi.DefineSplits) {
		b.WriteString("/" + nameValue(d.Name) + "=" + nameValue(d.Value))
	}
	b.WriteString("/nkv=" + strconv.Itoa(r.Config.NKV))
	return b.String()
}

// nameValue makes s safe inside a benchmark name: no spaces (they end the
// name) and no '/' (it separates name parts).
func nameValue(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '/' {
			return '_'
		}
		return r
	}, s)
}
