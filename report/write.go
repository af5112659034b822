package report

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// manifestName lists, one name a line, the files the last `ktune report`
// wrote into a directory: the next report into it removes those it does
// not write again (a plot of a shape no longer in the input), and nothing
// else, since a report may share its directory with a sweep's results.
const manifestName = ".ktune-report"

// legacyOutput matches what reports wrote before the manifest existed;
// it stands in for the manifest of a directory without one.
var legacyOutput = regexp.MustCompile(`^(report\.md|report\.json|tables\.csv|(nkv|probes|speedup|splits)_.+\.(png|svg))$`)

// WriteOptions selects the optional outputs of Write.
type WriteOptions struct {
	JSON bool // also write report.json (see Document)
	// NoPlots draws no plot: report.md and report.json then link none,
	// and the plots an earlier report wrote into the directory are
	// removed with its other stale files. Drawing the PNGs is most of the
	// time a report takes; the tables and decisions do not depend on it.
	NoPlots bool
}

// Write renders report.md, tables.csv and the plots into dir, as WriteDir
// does without options.
func (rep *Report) Write(dir string) ([]PlotFile, error) {
	return rep.WriteDir(context.Background(), dir, WriteOptions{})
}

// WriteDir renders the whole report into dir: report.md, tables.csv, the
// plots unless opts.NoPlots and, if asked, report.json. Everything is rendered into a
// temporary directory beside dir first, so that an error or a cancelled
// ctx (SIGINT) leaves dir as it was; the files are then renamed into
// place, each rename atomic, report.md and the manifest last. Files an
// earlier report wrote into dir and this one did not are removed. It
// returns the plot files, with their final paths.
func (rep *Report) WriteDir(ctx context.Context, dir string, opts WriteOptions) ([]PlotFile, error) {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("writing report: %w", err)
	}
	tmp, err := mkdirTemp(parent, "."+filepath.Base(filepath.Clean(dir))+".ktune-")
	if err != nil {
		return nil, fmt.Errorf("writing report: %w", err)
	}
	installed := false
	defer func() {
		if !installed {
			os.RemoveAll(tmp)
		}
	}()
	plots, names, err := rep.render(ctx, tmp, opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("writing report: %w", err)
	}
	if err := install(tmp, dir, names); err != nil {
		return nil, err
	}
	installed = true
	for i := range plots {
		plots[i].Base = filepath.Join(dir, filepath.Base(plots[i].Base))
		for j, f := range plots[i].Files {
			plots[i].Files[j] = filepath.Join(dir, filepath.Base(f))
		}
	}
	return plots, nil
}

// mkdirTemp makes a new directory in parent whose name starts with
// prefix, with the mode a plain mkdir gets (0777 less the umask): the
// temporary directory becomes the report's directory when there was none,
// and os.MkdirTemp's 0700 would keep everyone else out of it.
func mkdirTemp(parent, prefix string) (string, error) {
	for range 100 {
		name := filepath.Join(parent, prefix+strconv.FormatUint(rand.Uint64(), 36))
		if err := os.Mkdir(name, 0o777); !errors.Is(err, fs.ErrExist) {
			return name, err
		}
	}
	return "", fmt.Errorf("no new directory name in %s after 100 tries", parent)
}

// render writes every output into tmp and returns the file names in the
// order they are to be installed.
func (rep *Report) render(ctx context.Context, tmp string, opts WriteOptions) ([]PlotFile, []string, error) {
	var plots []PlotFile
	if !opts.NoPlots {
		var err error
		if plots, err = rep.plots(ctx, tmp); err != nil {
			return nil, nil, err
		}
	}
	var names []string
	for _, p := range plots {
		for _, f := range p.Files {
			names = append(names, filepath.Base(f))
		}
	}
	outs := []struct {
		name  string
		write func(io.Writer) error
	}{{"tables.csv", rep.WriteCSV}}
	if opts.JSON {
		outs = append(outs, struct {
			name  string
			write func(io.Writer) error
		}{"report.json", func(w io.Writer) error { return rep.WriteJSON(w, plots, tmp) }})
	}
	outs = append(outs, struct {
		name  string
		write func(io.Writer) error
	}{"report.md", func(w io.Writer) error { return rep.WriteMarkdown(w, plots, tmp) }})
	for _, out := range outs {
		if err := writeFile(filepath.Join(tmp, out.name), out.write); err != nil {
			return nil, nil, err
		}
		names = append(names, out.name)
	}
	return plots, names, nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	bw := bufio.NewWriter(f)
	werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), werr)
	}
	if cerr != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), cerr)
	}
	return nil
}

// install moves the rendered files of tmp into dir. A dir that does not
// exist yet is tmp renamed, in one step.
func install(tmp, dir string, names []string) error {
	if err := writeFile(filepath.Join(tmp, manifestName), func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Join(names, "\n")+"\n")
		return err
	}); err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		return nil
	}
	old, err := previousOutputs(dir)
	if err != nil {
		return err
	}
	for _, n := range append(names, manifestName) {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	keep := map[string]bool{manifestName: true}
	for _, n := range names {
		keep[n] = true
	}
	for _, n := range old {
		if keep[n] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the stale %s: %w", n, err)
		}
	}
	return os.RemoveAll(tmp)
}

// previousOutputs lists the files an earlier report wrote into dir: its
// manifest, or without one the files named as reports name theirs.
func previousOutputs(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err == nil {
		var out []string
		for _, l := range strings.Split(string(data), "\n") {
			// Only plain names: a manifest never points outside dir.
			if l = strings.TrimSpace(l); l != "" && l == filepath.Base(l) && l != "." && l != ".." {
				out = append(out, l)
			}
		}
		return out, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the report manifest: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("writing report: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && legacyOutput.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}
