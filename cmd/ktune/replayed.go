package main

// The commands that turn results into conclusions (report, gate, compare,
// tune --from) refuse records the replay backend served: those are
// another run's numbers, or none, and a table, a verdict or a dispatch
// table built on them would pass for a measurement.

import (
	"flag"
	"fmt"
	"io"

	"github.com/ktune/ktune/internal/results"
)

// registerAllowReplayed adds --allow-replayed to a command's flags.
func registerAllowReplayed(fs *flag.FlagSet, allow *bool) {
	fs.BoolVar(allow, "allow-replayed", false,
		"use records served by 'sweep --backend replay' as if measured (a pipeline test, never a result)")
}

// refuseReplayed returns a usage error when recs hold replayed records,
// unless allow, when it only warns on stderr.
func refuseReplayed(stderr io.Writer, recs []results.Record, allow bool) error {
	_, replayed := results.Measured(recs)
	if len(replayed) == 0 {
		return nil
	}
	r := replayed[0]
	how := "not recorded"
	switch {
	case r.Replayed == nil:
		how = "marked by its host " + r.Env.Host
	case r.Replayed.Match != results.ReplayNone:
		how = "matched by " + string(r.Replayed.Match)
	}
	what := fmt.Sprintf("%d of %d records were served by the replay backend, not measured (the first: %s %s nkv %d, %s)",
		len(replayed), len(recs), r.Config.Variant, r.Config.Defines.Own(), r.Config.NKV, how)
	if allow {
		fmt.Fprintf(stderr, "warning: %s; --allow-replayed uses them as if measured\n", what)
		return nil
	}
	return usageErrorf("%s; --allow-replayed uses them anyway, for testing a pipeline", what)
}

// refuseReplayedFiles is refuseReplayed over the records of results files
// or sweep directories; reading them is left to the command, which
// reports their problems.
func refuseReplayedFiles(stderr io.Writer, paths []string, allow bool) error {
	set, err := results.Load(paths...)
	if err != nil {
		return nil
	}
	return refuseReplayed(stderr, set.Records, allow)
}
