package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/sweep"
)

func init() {
	register(&command{
		name:    "merge",
		summary: "join the results directories of a sharded sweep into one",
		run: func(stdout, stderr io.Writer, args []string) error {
			return runMerge(context.Background(), stdout, stderr, args)
		},
	})
}

const mergeUsage = `Usage: ktune merge -o DIR SHARDDIR...

Merge joins the results of the shards of one sweep ('ktune sweep
--shard i/n', one directory each) into a new results directory DIR, so
that report, compare and gate see one sweep. A SHARDDIR may also be a
results file. No GPU is needed.

It refuses, and writes nothing, when the inputs are not parts of one
sweep: records of different specs, shards of different plans (the spec,
a kernel or the flags changed between them: DIR/shard.json records the
plan's hash), the same shard twice, or one point recorded with different
results in two inputs (measured twice: leave out the input that should
not count), or a line it cannot read as a record (a damaged line, or a
record of a newer schema): merge is the step after which shards get
deleted, so it never drops a record. A record found identical in two
inputs (the same file given twice) is kept once and counted as a
duplicate; within one input the last line of a hash wins, as everywhere,
and the superseded lines are counted. Inputs without a single record are
refused. Missing shards, and a shard whose task stopped before its last
point, are reported and the rest is merged, but the command then exits
with status 1: the merged results are a part of the sweep, not the sweep. DIR/results.jsonl appears whole or not at all: it is
written beside and renamed into place.

The output lists the inputs' records in the order the inputs are given,
each in its file order, so the same command always writes the same file.

Examples:

  $ ktune merge -o out/slice out/shard-0 out/shard-1 out/shard-2 out/shard-3
  $ ktune merge -o out/slice out/shard-*
  $ ktune report out/slice -o out/report

Exit status: 0 the shards were joined into DIR, 1 no records, a shard
missing or stopped early (DIR is not written as complete) or an I/O
error, 2 a bad command line, a shard directory of another plan, or an
output that already holds results.

Flags:
`

func runMerge(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "the new results `DIR` (created; must not hold results yet)")
	inputs, help, err := parseArgs(fs, args, mergeUsage)
	if help || err != nil {
		return err
	}
	if *out == "" {
		return usageErrorf("merge wants -o DIR: the directory to write the joined results.jsonl to (ktune help merge)")
	}
	if len(inputs) == 0 {
		return usageErrorf("merge wants the shard directories to join (ktune help merge)")
	}
	outAbs, _ := filepath.Abs(*out)
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			return usageErrorf("merge: %v", err)
		}
		if st.IsDir() {
			// A shard still being swept would be merged half done.
			l, err := results.LockDir(ctx, in, results.LockOptions{Holder: results.ThisProcess(time.Now())})
			if err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			l.Unlock()
		}
		if a, _ := filepath.Abs(in); a == outAbs || a == results.FilePath(outAbs) {
			return usageErrorf("merge: %s is both an input and the output; write the merge to a new directory", in)
		}
	}
	if st, err := os.Stat(results.FilePath(*out)); err == nil && st.Size() > 0 {
		return usageErrorf("merge: %s already holds results; merge writes a new directory", *out)
	}

	m, err := sweep.Merge(inputs)
	if err != nil {
		return withCode(exitUsage, err)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if len(m.Records) == 0 {
		return fmt.Errorf("merge: no records in %v: nothing to merge, nothing written", inputs)
	}

	lock, err := results.LockDir(ctx, *out, results.LockOptions{Holder: results.ThisProcess(time.Now())})
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if err := writeAtomically(*out, m.Records); err != nil {
		return err
	}
	if m.Manifest != nil {
		if err := sweep.WriteManifest(*out, m.Manifest); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "merged %d records from %d inputs", len(m.Records), len(inputs))
	if m.Identical > 0 {
		fmt.Fprintf(stdout, " (%d duplicates: found identical in two inputs, kept once)", m.Identical)
	}
	if m.Superseded > 0 {
		fmt.Fprintf(stdout, " (%d superseded by a later line of the same point)", m.Superseded)
	}
	if mf := m.Manifest; mf != nil {
		fmt.Fprintf(stdout, "; shards %d of %d", len(mf.Shards), mf.Count)
	}
	fmt.Fprintf(stdout, " into %s\n", results.FilePath(*out))
	if len(m.Warnings) > 0 {
		return fmt.Errorf("merge: the merged results are incomplete (%d warning(s) above): a shard is missing or stopped early", len(m.Warnings))
	}
	return nil
}

// writeAtomically writes recs as dir/results.jsonl through a results
// Writer in a temporary directory beside it, then renames the file into
// place: an interrupted merge leaves no results file rather than a short
// one that looks complete.
func writeAtomically(dir string, recs []results.Record) error {
	tmp, err := os.MkdirTemp(dir, ".merge-")
	if err != nil {
		return fmt.Errorf("writing the merged results: %w", err)
	}
	defer os.RemoveAll(tmp)
	w, err := results.OpenWriter(tmp)
	if err != nil {
		return err
	}
	for i := range recs {
		if err := w.Append(&recs[i]); err != nil {
			w.Close()
			return fmt.Errorf("writing the merged results: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := os.Rename(results.FilePath(tmp), results.FilePath(dir)); err != nil {
		return fmt.Errorf("writing the merged results: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: make the rename durable
		d.Close()
	}
	return nil
}
