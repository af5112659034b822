package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ktune/ktune/internal/buildinfo"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print ktune's version, the revision it was built from, and the Go version",
		run:     runVersion,
	})
}

const versionUsage = `Usage: ktune version

Version prints the module version, the VCS revision ktune was built from
(with "(modified)" when the tree had uncommitted changes) and the Go
toolchain. Results records carry the short form in env.ktune, e.g.
"(devel)+2244491a3b1c-dirty". 'make build' records the revision in every
checkout; a plain 'go build' in a git worktree cannot.

Example:
  $ ktune version

Exit status: 0, or 2 when given an argument.
`

func runVersion(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), versionUsage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return withCode(exitUsage, errSilent)
	}
	if fs.NArg() > 0 {
		return usageErrorf("version takes no arguments, got %q", fs.Args())
	}
	_, err := fmt.Fprint(stdout, buildinfo.Read())
	return err
}
