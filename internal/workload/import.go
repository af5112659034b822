package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// parseCSV reads a histogram: a header row naming batch, nkv and weight
// columns (with the aliases of the package documentation).
func parseCSV(path string, data []byte) (*Workload, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("workload %s: reading the header row: %w", path, err)
	}
	col := map[string]int{}
	aliases := map[string][]string{
		"batch":  {"batch", "batch_size"},
		"nkv":    {"nkv", "context", "context_len", "kv_len", "seq_len"},
		"weight": {"weight", "count"},
	}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		for name, as := range aliases {
			for _, a := range as {
				if h == a {
					if _, dup := col[name]; dup {
						return nil, &SyntaxError{path, 1, fmt.Sprintf("two columns for %s", name)}
					}
					col[name] = i
				}
			}
		}
	}
	for _, name := range []string{"batch", "nkv", "weight"} {
		if _, ok := col[name]; !ok {
			return nil, &SyntaxError{path, 1, fmt.Sprintf("no %s column (one of %s)", name, strings.Join(aliases[name], ", "))}
		}
	}
	w := &Workload{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", path, err)
		}
		var b Bucket
		field := func(name string) (string, error) {
			i := col[name]
			if i >= len(rec) {
				return "", &SyntaxError{path, line, fmt.Sprintf("no %s value", name)}
			}
			return strings.TrimSpace(rec[i]), nil
		}
		for _, f := range []struct {
			name string
			to   *int
		}{{"batch", &b.Batch}, {"nkv", &b.NKV}} {
			v, err := field(f.name)
			if err != nil {
				return nil, err
			}
			if *f.to, err = strconv.Atoi(v); err != nil {
				return nil, &SyntaxError{path, line, fmt.Sprintf("%s %q: not an integer", f.name, v)}
			}
		}
		v, err := field("weight")
		if err != nil {
			return nil, err
		}
		if b.Weight, err = strconv.ParseFloat(v, 64); err != nil {
			return nil, &SyntaxError{path, line, fmt.Sprintf("weight %q: not a number", v)}
		}
		if err := b.check(); err != nil {
			return nil, &SyntaxError{path, line, err.Error()}
		}
		w.Buckets = append(w.Buckets, b)
	}
	return w, nil
}

// A traceLine is the part of a FlashInfer-Bench trace line ktune reads.
type traceLine struct {
	Definition string `json:"definition"`
	Workload   struct {
		Axes map[string]int `json:"axes"`
	} `json:"workload"`
}

var pageSuffix = regexp.MustCompile(`_ps(\d+)(?:_|$)`)

// parseTrace reads a FlashInfer-Bench trace: every gqa_paged_decode call
// is a bucket of weight 1.
func parseTrace(path string, data []byte) (*Workload, error) {
	w := &Workload{}
	other := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var tl traceLine
		if err := json.Unmarshal([]byte(text), &tl); err != nil {
			return nil, &SyntaxError{path, n, fmt.Sprintf("not a JSON trace line: %v", err)}
		}
		if !strings.HasPrefix(tl.Definition, "gqa_paged_decode") {
			other++
			continue
		}
		m := pageSuffix.FindStringSubmatch(tl.Definition)
		if m == nil {
			return nil, &SyntaxError{path, n, fmt.Sprintf("definition %q: no _ps<page_size> suffix to count tokens by", tl.Definition)}
		}
		ps, _ := strconv.Atoi(m[1])
		bs, pages := tl.Workload.Axes["batch_size"], tl.Workload.Axes["num_kv_indices"]
		if bs < 1 || pages < 1 || ps < 1 {
			return nil, &SyntaxError{path, n, fmt.Sprintf("axes batch_size %d, num_kv_indices %d, page size %d: want each ≥ 1", bs, pages, ps)}
		}
		w.Buckets = append(w.Buckets, Bucket{Batch: bs, NKV: (pages*ps + bs - 1) / bs, Weight: 1})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("workload %s: %w", path, err)
	}
	w.Notes = append(w.Notes, fmt.Sprintf("%d decode call(s) traced; nkv is each call's mean context (pages × page size / batch): a trace has no per-sequence lengths", len(w.Buckets)))
	if other > 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("%d line(s) of other definitions skipped", other))
	}
	return w, nil
}

// A segment of a batch spec: count requests of q_len new tokens over
// seq_len tokens of context.
var segment = regexp.MustCompile(`^(\d*)q(\d+)(k?)(?:s(\d+)(k?))?$`)

// ParseBatchSpec reads one vLLM batch specification ("2q2k_32q1s1k") as
// a decode step: batch = the decode rows (q_len 1), nkv = their longest
// seq_len. prefill counts the rows of other segments, which are dropped.
func ParseBatchSpec(spec string) (b Bucket, prefill int, err error) {
	b.Weight = 1
	for _, seg := range strings.Split(spec, "_") {
		m := segment.FindStringSubmatch(seg)
		if m == nil {
			return b, 0, fmt.Errorf("batch spec %q: segment %q: want (count)q(q_len)[k][s(seq_len)[k]], e.g. 32q1s1k", spec, seg)
		}
		count := 1
		if m[1] != "" {
			count, _ = strconv.Atoi(m[1])
		}
		q := kilo(m[2], m[3])
		seq := q // a prefill's context is its own tokens
		if m[4] != "" {
			seq = kilo(m[4], m[5])
		}
		if count < 1 || q < 1 || seq < q {
			return b, 0, fmt.Errorf("batch spec %q: segment %q: want count ≥ 1 and seq_len ≥ q_len ≥ 1", spec, seg)
		}
		if q != 1 {
			prefill += count
			continue
		}
		b.Batch += count
		b.NKV = max(b.NKV, seq)
	}
	return b, prefill, nil
}

func kilo(digits, k string) int {
	n, _ := strconv.Atoi(digits)
	if k != "" {
		n *= 1024
	}
	return n
}

// parseBatchSpecs reads one batch spec a line, each optionally followed by
// its weight.
func parseBatchSpecs(path string, data []byte) (*Workload, error) {
	w := &Workload{}
	prefill, noDecode := 0, 0
	for n, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) > 2 {
			return nil, &SyntaxError{path, n + 1, fmt.Sprintf("want SPEC [WEIGHT], got %d fields", len(f))}
		}
		b, p, err := ParseBatchSpec(f[0])
		if err != nil {
			return nil, &SyntaxError{path, n + 1, err.Error()}
		}
		if len(f) == 2 {
			if b.Weight, err = strconv.ParseFloat(f[1], 64); err != nil {
				return nil, &SyntaxError{path, n + 1, fmt.Sprintf("weight %q: not a number", f[1])}
			}
		}
		prefill += p
		if b.Batch == 0 {
			noDecode++
			continue
		}
		if err := b.check(); err != nil {
			return nil, &SyntaxError{path, n + 1, err.Error()}
		}
		w.Buckets = append(w.Buckets, b)
	}
	if prefill > 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("%d prefill/extend row(s) dropped: not decode attention", prefill))
	}
	if noDecode > 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("%d spec(s) without decode rows skipped", noDecode))
	}
	return w, nil
}
