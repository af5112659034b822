package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
)

// keptFile, in a sanitize's Dir, holds one line per finished run: the
// tool, the point's hash (which covers its kernel's source, defines,
// shape and gates) and the verdict, appended as each run ends.
const keptFile = "verdicts.jsonl"

// A keptRun is one line of keptFile.
type keptRun struct {
	Tool sanitizer.Tool `json:"tool"`
	Hash string         `json:"hash"`
	Gate results.Gate   `json:"gate"`
	// Kernel names the point the hash stands for (variant, shape and
	// defines), so that the file says by itself which kernels a sanitize
	// covered; it is not read back.
	Kernel string `json:"kernel,omitempty"`
	// Gated says the worker answered with the point's record, gated:
	// every pass written since ktune checked that (sanitizePoint). A pass
	// without it, from an older ktune, rests on its report alone; it is
	// taken, and counted in the log when read.
	Gated bool `json:"gated,omitempty"`
}

// kept is the verdicts of the sanitized runs that finished, earlier ones
// read back and this sanitize's appended.
type kept struct {
	f    *os.File
	runs map[string]results.Gate
}

func keptKey(tool sanitizer.Tool, hash string) string { return string(tool) + " " + hash }

// reportPath is where a run of tool on the point of this hash leaves its
// report, in a sanitize's Dir.
func reportPath(dir string, tool sanitizer.Tool, hash string) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s.log", tool, hash))
}

// reread reads a kept pass's report again, when it is still in dir, with
// this ktune's reader: the reason it no longer reads clean, or "" (clean,
// or no report to read: a kept file brought from elsewhere). A reader
// that learns a new kind of finding (racecheck's warning-level hazards,
// before 718a69e read as nothing) so reaches the passes kept before it.
func reread(dir string, r keptRun) (string, error) {
	f, err := os.Open(reportPath(dir, r.Tool, r.Hash))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading a kept pass's report: %w", err)
	}
	defer f.Close()
	rep, err := sanitizer.Parse(r.Tool, f)
	if err != nil {
		return "", err
	}
	if rep.Clean() {
		return "", nil
	}
	return "its report now reads " + rep.Detail(), nil
}

// openKept reads dir's kept runs and opens the file for more. A line that
// does not read back as a sanitizer verdict of a known tool for a hash,
// that holds what put never writes (results.StrictCheck), a pass whose
// detail is not its tool's clean one (check), or a line longer than
// results.MaxLineBytes (read past, never held) is skipped with a warning,
// so that its run happens again: a damaged or contradictory line never
// stands for a run. Nor does a kept pass whose report, still in dir, this
// ktune no longer reads as clean (reread). Lines of one tool and hash that
// disagree make their key contradictory: the failure stands (keepFailure).
func openKept(dir string, log io.Writer) (*kept, error) {
	path := filepath.Join(dir, keptFile)
	k := &kept{runs: map[string]results.Gate{}}
	if f, err := os.Open(path); err == nil {
		err := k.read(f, dir, path, log)
		f.Close()
		if err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the kept sanitizer verdicts: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the kept sanitizer verdicts: %w", err)
	}
	k.f = f
	return k, nil
}

// keptVerdicts is every line of one key read back: the line numbers of
// its passes and of its failures, and the first failure.
type keptVerdicts struct {
	passes, fails []int
	failure       results.Gate
}

// read reads the kept lines of f (path, in dir) into k.runs.
func (k *kept) read(f io.Reader, dir, path string, log io.Writer) error {
	unchecked := 0 // passes that predate the worker check
	byKey := map[string]*keptVerdicts{}
	var order []string
	lr := results.NewLineReader(f)
	for {
		b, skipped, rerr := lr.Next()
		n := lr.Line()
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("reading the kept sanitizer verdicts %s: %w", path, rerr)
		}
		line := bytes.TrimSpace(b)
		if skipped > 0 || len(line) > 0 {
			r, err := keptLine(dir, line, skipped)
			var rep *rereadError
			if errors.As(err, &rep) {
				return rep.err
			}
			if err != nil {
				fmt.Fprintf(log, "sanitize: %s:%d: %v: that run happens again\n", path, n, err)
			} else {
				key := keptKey(r.Tool, r.Hash)
				v := byKey[key]
				if v == nil {
					v = &keptVerdicts{}
					byKey[key] = v
					order = append(order, key)
				}
				if r.Gate.Pass {
					v.passes = append(v.passes, n)
					if !r.Gated {
						unchecked++
					}
				} else {
					if len(v.fails) == 0 {
						v.failure = r.Gate
					}
					v.fails = append(v.fails, n)
				}
				k.runs[key] = r.Gate
			}
		}
		if rerr != nil {
			break
		}
	}
	for _, key := range order {
		k.keepFailure(key, byKey[key], path, log)
	}
	if unchecked > 0 {
		fmt.Fprintf(log, "sanitize: %s: %d kept pass(es) from an older ktune rest on the report alone, not on the worker's record of the point; taken as they are (a new directory runs them again)\n",
			path, unchecked)
	}
	return nil
}

// keepFailure makes a key whose lines disagree (a pass and a failure of
// one tool on one hash) stand as its failure, with a warning naming the
// lines: a failure anywhere stays a failure, whatever line came last, as
// it does in results files (package evidence).
func (k *kept) keepFailure(key string, v *keptVerdicts, path string, log io.Writer) {
	if len(v.passes) == 0 || len(v.fails) == 0 {
		return
	}
	k.runs[key] = v.failure
	fmt.Fprintf(log, "sanitize: %s: lines %s (fail) and %s (pass) of %s disagree: the failure stands (%s)\n",
		path, lineList(v.fails), lineList(v.passes), key, v.failure.Detail)
}

func lineList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// A rereadError is a kept pass's report that could not be read: an error
// of the directory, not of the line.
type rereadError struct{ err error }

func (e *rereadError) Error() string { return e.err.Error() }

// keptLine reads one kept line (skipped: the length of a line too long to
// hold, whose bytes are not there), or says why it stands for no run.
func keptLine(dir string, line []byte, skipped int64) (keptRun, error) {
	var r keptRun
	if skipped > 0 {
		return r, errors.New(results.TooLong(skipped))
	}
	err := json.Unmarshal(line, &r)
	if msg := results.StrictCheck(line, reflect.TypeFor[keptRun]()); err == nil && msg != "" {
		// A key twice ("pass": false, then true), re-cased or nulled:
		// encoding/json would forgive it, and put could never have
		// written it.
		err = errors.New(msg)
	}
	if err == nil {
		err = r.check()
	}
	if err == nil && r.Gate.Pass {
		why, rerr := reread(dir, r)
		if rerr != nil {
			return r, &rereadError{rerr}
		}
		if why != "" {
			err = fmt.Errorf("a kept %s pass: %s", r.Tool, why)
		}
	}
	return r, err
}

func (r keptRun) check() error {
	if !slices.Contains(sanitizer.Tools, r.Tool) {
		return fmt.Errorf("tool %q", r.Tool)
	}
	if r.Hash == "" {
		return errors.New("no point hash")
	}
	if r.Gate.Kind != results.GateSanitizer || r.Gate.Detail == "" {
		return fmt.Errorf("not a sanitizer verdict (kind %q)", r.Gate.Kind)
	}
	if clean := sanitizer.CleanDetail(r.Tool); r.Gate.Pass && r.Gate.Detail != clean {
		// A pass says what a clean report of its tool says, and nothing
		// else: a line whose detail counts errors, names a finding, a
		// warning, a run cut short or another tool contradicts itself.
		return fmt.Errorf("a pass whose detail, %q, is not a clean %s report's (%q)", r.Gate.Detail, r.Tool, clean)
	}
	if !r.Gate.Pass && sanitizer.ToolFailureOnly(r.Gate.Detail) {
		// An older ktune kept compute-sanitizer's own failure as the
		// kernel's errors.
		return errors.New("the sanitizer's own failure, no verdict on the kernel")
	}
	return nil
}

func (k *kept) get(tool sanitizer.Tool, hash string) (results.Gate, bool) {
	g, ok := k.runs[keptKey(tool, hash)]
	return g, ok
}

// put appends one finished run, on disk before the next run is told of.
func (k *kept) put(tool sanitizer.Tool, hash, kernel string, g results.Gate, gated bool) error {
	line, err := json.Marshal(keptRun{Tool: tool, Hash: hash, Gate: g, Kernel: kernel, Gated: gated})
	if err != nil {
		return err
	}
	if _, err := k.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("keeping a sanitizer verdict: %w", err)
	}
	k.runs[keptKey(tool, hash)] = g
	return nil
}

func (k *kept) close() { k.f.Close() }
