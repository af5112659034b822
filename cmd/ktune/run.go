package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
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
	// exitUnanswered: sweep completed, but points of the plan have no
	// answer about their kernel (status error, timeout or oom).
	exitUnanswered = 6
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
	hidden  bool   // internal (e.g. the worker process)
	manual  string // the long form of the help, after the usage: 'ktune help NAME --long'
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
		topic, long := helpArgs(args[1:])
		out := &errWriter{w: stdout}
		switch {
		case len(args) == 1:
			usage(out)
			return out.wrote()
		case topic == "help" && len(args) == 2:
			fmt.Fprint(out, helpUsage)
			return out.wrote()
		}
		c, ok := commands[topic]
		if !ok {
			usage(stderr)
			return usageErrorf("help: unknown command %q", strings.Join(args[1:], " "))
		}
		return commandHelp(stdout, c, long)
	case "--version", "-version":
		return commands["version"].run(stdout, stderr, nil)
	}
	c, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return usageErrorf("unknown command %q", args[0])
	}
	if wantsHelp(args[1:]) {
		return commandHelp(stdout, c, slices.Contains(args[1:], "--long"))
	}
	return c.run(stdout, stderr, args[1:])
}

const helpUsage = `Usage: ktune help [COMMAND [--long]]

Help prints the list of commands, or a command's usage: what it does, its
flags with the kind of value each takes (-o DIR, -backend NAME), examples
and its exit status. 'ktune COMMAND -h' prints the same. --long adds the
rest of a command's manual where it has one (sweep: compiling, profiling,
faults, several GPUs and machines, compute-sanitizer, the replay backend).

Exit status: 0 help was printed, 2 no such command.
`

// helpArgs reads help's arguments: a command name and, anywhere, --long.
// Anything else makes the topic unknown ("" or the words given).
func helpArgs(args []string) (topic string, long bool) {
	var words []string
	for _, a := range args {
		if a == "--long" || a == "-long" {
			long = true
			continue
		}
		words = append(words, a)
	}
	if len(words) != 1 {
		return strings.Join(words, " "), long
	}
	return words[0], long
}

// commandHelp prints c's manual: its usage and, when long, the rest of it.
// Help that was asked for is the output, not a diagnostic: it goes to
// standard output (so that `ktune help sweep | grep` works) and exits 0,
// whatever writer c's flag set reports to.
// A help that could not be written (ktune help > /dev/full) is an error.
func commandHelp(stdout io.Writer, c *command, long bool) error {
	out := &errWriter{w: stdout}
	if err := c.run(out, out, []string{"-h"}); err != nil {
		return err
	}
	switch {
	case c.manual == "":
	case long:
		fmt.Fprint(out, c.manual)
	default:
		fmt.Fprintf(out, "\nThe rest of the manual: 'ktune help %s --long'.\n", c.name)
	}
	return out.wrote()
}

// An errWriter keeps the first error of its writer: text printed with
// fmt.Fprint, whose errors nobody reads, is checked once at the end.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// wrote returns the first write error, said as such.
func (e *errWriter) wrote() error {
	if e.err != nil {
		return fmt.Errorf("writing the help: %w", e.err)
	}
	return nil
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

// maxWordBytes bounds one word of a printed error: a name read from a
// damaged file or a spec (a 10 MB variant name) is echoed clipped, not
// whole.
const maxWordBytes = 200

// clipWords shortens every run of more than n bytes without a space or a
// newline in s to its first n bytes (whole UTF-8 characters) and a count
// of the rest.
func clipWords(s string, n int) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexAny(s, " \n")
		if i < 0 {
			i = len(s)
		}
		w := s[:i]
		if len(w) > n {
			cut := n
			for cut > 0 && !utf8.RuneStart(w[cut]) {
				cut--
			}
			w = fmt.Sprintf("%s…(%d more bytes)", w[:cut], len(w)-cut)
		}
		b.WriteString(w)
		if i < len(s) {
			b.WriteByte(s[i])
			i++
		}
		s = s[i:]
	}
	return b.String()
}
