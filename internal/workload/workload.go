package workload

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Version is the workload file format's version.
const Version = 1

// A Bucket is one kind of decode step and how often it occurs.
type Bucket struct {
	Batch  int     `yaml:"batch" json:"batch"`   // sequences per decode call
	NKV    int     `yaml:"nkv" json:"nkv"`       // context length of each (the longest of a ragged batch)
	Weight float64 `yaml:"weight" json:"weight"` // share of the steps; normalised to sum to 1 by Load
	Label  string  `yaml:"label,omitempty" json:"label,omitempty"`
}

// String names a bucket in messages: "batch 1, nkv 512 (short chats)".
func (b Bucket) String() string {
	s := fmt.Sprintf("batch %d, nkv %d", b.Batch, b.NKV)
	if b.Label != "" {
		s += " (" + b.Label + ")"
	}
	return s
}

// A Workload is the traffic a kernel is judged under.
type Workload struct {
	Name    string   // from the file, else the file's base name
	Source  string   // the file it was read from
	Buckets []Bucket // distinct (batch, nkv), sorted by batch then nkv; weights sum to 1
	// Notes say what an importer dropped or approximated (prefill rows,
	// lines of other definitions, a mean context for a traced batch).
	Notes []string
}

// A SyntaxError is a mistake in a workload file, at a line.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Load reads a workload in the form its file name says (see the package
// documentation).
func Load(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading workload: %w", err)
	}
	var w *Workload
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		w, err = parseYAML(path, data)
	case ".csv":
		w, err = parseCSV(path, data)
	case ".jsonl":
		w, err = parseTrace(path, data)
	case ".txt", ".batchspec":
		w, err = parseBatchSpecs(path, data)
	default:
		return nil, fmt.Errorf("workload %s: unknown form %q: want .yaml (ktune's), .csv (a histogram), .jsonl (a FlashInfer-Bench trace) or .txt/.batchspec (vLLM batch specs)", path, ext)
	}
	if err != nil {
		return nil, err
	}
	w.Source = path
	if w.Name == "" {
		w.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if err := w.normalize(); err != nil {
		return nil, fmt.Errorf("workload %s: %w", path, err)
	}
	return w, nil
}

type yamlFile struct {
	Workload int      `yaml:"workload"`
	Name     string   `yaml:"name"`
	Buckets  []Bucket `yaml:"buckets"`
}

func parseYAML(path string, data []byte) (*Workload, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f yamlFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("workload %s: %w", path, err)
	}
	if f.Workload != Version {
		return nil, fmt.Errorf("workload %s: want \"workload: %d\" (the format's version), got %d", path, Version, f.Workload)
	}
	var node yaml.Node
	_ = yaml.Unmarshal(data, &node) // decoded above: only for line numbers
	lines := bucketLines(&node)
	for i, b := range f.Buckets {
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		if err := b.check(); err != nil {
			return nil, &SyntaxError{File: path, Line: line, Msg: err.Error()}
		}
	}
	return &Workload{Name: f.Name, Buckets: f.Buckets}, nil
}

// bucketLines returns the line of each item of the top-level "buckets".
func bucketLines(doc *yaml.Node) []int {
	if len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "buckets" {
			var out []int
			for _, it := range m.Content[i+1].Content {
				out = append(out, it.Line)
			}
			return out
		}
	}
	return nil
}

func (b Bucket) check() error {
	switch {
	case b.Batch < 1:
		return fmt.Errorf("bucket %s: batch must be ≥ 1", b)
	case b.NKV < 1:
		return fmt.Errorf("bucket %s: nkv must be ≥ 1", b)
	case math.IsNaN(b.Weight) || math.IsInf(b.Weight, 0) || b.Weight < 0:
		return fmt.Errorf("bucket %s: weight %g must be finite and ≥ 0", b, b.Weight)
	}
	return nil
}

// normalize merges buckets of the same (batch, nkv), drops zero weights,
// sorts, and scales the weights to sum to 1.
func (w *Workload) normalize() error {
	merged := map[[2]int]*Bucket{}
	var total float64
	for _, b := range w.Buckets {
		if err := b.check(); err != nil {
			return err
		}
		total += b.Weight
		k := [2]int{b.Batch, b.NKV}
		if m := merged[k]; m != nil {
			m.Weight += b.Weight
			if m.Label == "" {
				m.Label = b.Label
			}
			continue
		}
		c := b
		merged[k] = &c
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return errors.New("no bucket with a positive weight")
	}
	w.Buckets = w.Buckets[:0]
	for _, b := range merged {
		if b.Weight > 0 {
			b.Weight /= total
			w.Buckets = append(w.Buckets, *b)
		}
	}
	slices.SortFunc(w.Buckets, func(a, b Bucket) int {
		return cmp.Or(cmp.Compare(a.Batch, b.Batch), cmp.Compare(a.NKV, b.NKV))
	})
	return nil
}

// Spread returns the share of w's steps each measured nkv of a batch
// stands for (nkvs ascending): a bucket at a measured nkv gives it its
// weight, one between two measured nkv splits its weight between them as
// Evaluate interpolates, and one beyond the measured range is an error
// (never extrapolated). Buckets of other batches give nothing; the shares
// are those of the whole workload.
func (w *Workload) Spread(batch int, nkvs []int) ([]float64, error) {
	out := make([]float64, len(nkvs))
	for _, b := range w.Buckets {
		if b.Batch != batch {
			continue
		}
		i, found := slices.BinarySearch(nkvs, b.NKV)
		switch {
		case found:
			out[i] += b.Weight
		case i == 0 || i == len(nkvs):
			return nil, fmt.Errorf("workload %s: bucket %s lies outside the measured nkv %d–%d: not extrapolated", w.Name, b, nkvs[0], nkvs[len(nkvs)-1])
		default:
			lo, hi := nkvs[i-1], nkvs[i]
			f := float64(b.NKV-lo) / float64(hi-lo)
			out[i-1] += b.Weight * (1 - f)
			out[i] += b.Weight * f
		}
	}
	return out, nil
}
