package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes. They are part of ktune's interface (README, "Exit codes"):
// scripts and CI steps branch on them.
const (
	exitOK         = 0
	exitError      = 1 // the run failed: device, I/O, an interrupted sweep
	exitUsage      = 2 // bad command line or spec (file:line:col in the message)
	exitNumerics   = 3 // gate: the candidate fails its numerics class
	exitBuild      = 3 // check: a kernel did not build or breaks a limit
	exitRegression = 4 // gate: the candidate is significantly slower than the baseline
	exitUndecided  = 5 // gate: nothing failed, but the samples (or damaged input) cannot support a pass
	exitInterrupt  = 130
)

// codeError carries an exit code with an error.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// withCode wraps err so that ktune exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codeError{code, err}
}

// usageErrorf reports a command-line mistake (exit 2).
func usageErrorf(format string, args ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, args...))
}

func exitCode(err error) int {
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitError
}

// A command is one ktune subcommand. Each lives in its own file and
// registers itself from init, so that every subcommand is a plain function
// a test can call.
type command struct {
	name    string
	summary string // one line for `ktune help`
	run     func(stdout, stderr io.Writer, args []string) error
	hidden  bool // internal (e.g. the worker process)
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errSilent marks an error already reported to the user; run returns it
// for its exit code only.
var errSilent = errors.New("")

func run(stdout, stderr io.Writer, args []string) error {
	if len(args) == 0 {
		usage(stderr)
		return withCode(exitUsage, errSilent)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) == 1 {
			usage(stdout)
			return nil
		}
		c, ok := commands[args[1]]
		if !ok || len(args) > 2 {
			usage(stderr)
			return usageErrorf("help: unknown command %q", strings.Join(args[1:], " "))
		}
		return commandHelp(stdout, c)
	case "--version", "-version":
		return commands["version"].run(stdout, stderr, nil)
	}
	c, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return usageErrorf("unknown command %q", args[0])
	}
	if wantsHelp(args[1:]) {
		return commandHelp(stdout, c)
	}
	return c.run(stdout, stderr, args[1:])
}

// commandHelp prints c's manual. Help that was asked for is the output,
// not a diagnostic: it goes to standard output (so that `ktune help sweep
// | grep` works) and exits 0, whatever writer c's flag set reports to.
func commandHelp(stdout io.Writer, c *command) error {
	return c.run(stdout, stdout, []string{"-h"})
}

// wantsHelp reports a -h, -help or --help among a command's arguments
// (before a "--"), as the flag package would read it.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprint(w, `ktune autotunes, benchmarks and gates split-KV decode attention kernels.

Usage:
  ktune <command> [arguments]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Run 'ktune help <command>' for a command's flags and examples.
`)
}
