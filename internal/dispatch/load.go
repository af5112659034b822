package dispatch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ktune/ktune/internal/results"
)

// A Source identifies one results file a table was built from, by name and
// content rather than by date, so that the generated files change only
// when the evidence does.
type Source struct {
	Name   string // the path as given when relative, else the base name (never absolute)
	SHA256 string // hex sha256 of the file's bytes as read
}

// An Input is the content of the results files a table is built from.
type Input struct {
	Records  []results.Record // in file order; within a file the last record of a hash wins
	Sources  []Source         // one per file, in the order given
	Warnings []error          // lines that were skipped (*results.SyntaxError)
	// Superseded holds the lines a later line of their hash replaced: a
	// failure there still counts (Options.Failed).
	Superseded []results.Record
}

// Load reads results files; a path that is a directory means the
// results.jsonl inside it (a sweep's output directory). Each file is read
// once into memory so that its hash and its records describe the same bytes
// even while a sweep appends to it.
func Load(paths ...string) (*Input, error) {
	in := &Input{}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = results.FilePath(p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading results: %w", err)
		}
		sum := sha256.Sum256(b)
		in.Sources = append(in.Sources, Source{Name: sourceName(p), SHA256: hex.EncodeToString(sum[:])})
		r := results.NewReader(bytes.NewReader(b), p)
		var recs []results.Record
		for r.Scan() {
			rec, err := r.Record()
			if err != nil {
				in.Warnings = append(in.Warnings, err)
				continue
			}
			recs = append(recs, rec)
		}
		if err := r.Err(); err != nil {
			return nil, err
		}
		// `ktune sweep --force` appends a new measurement of a recorded
		// point: the latest line is the one that counts.
		latest, _ := results.Latest(recs)
		in.Records = append(in.Records, latest...)
		in.Superseded = append(in.Superseded, superseded(recs)...)
	}
	return in, nil
}

// sourceName keeps generated files free of absolute paths, which would
// make them differ from one checkout to the next.
func sourceName(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	dir, base := filepath.Split(filepath.Clean(p))
	if base == results.FileName {
		// A sweep directory: its name says more than results.jsonl.
		return filepath.Base(dir) + "/" + base
	}
	return base
}

// superseded returns the lines of recs (one file) that a later line of the
// same hash replaces.
func superseded(recs []results.Record) []results.Record {
	last := map[string]int{}
	for i := range recs {
		last[recs[i].Hash] = i
	}
	var out []results.Record
	for i := range recs {
		if last[recs[i].Hash] != i {
			out = append(out, recs[i])
		}
	}
	return out
}
