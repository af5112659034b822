package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/stats"
)

// An ncuKernel is one kernel launch Nsight Compute profiled: the name it
// printed (the function name, --print-kernel-base function) and its
// gpu__time_duration.sum.
type ncuKernel struct {
	Name string
	NS   float64
}

// parseNCU reads the CSV that `ncu --csv --metrics gpu__time_duration.sum`
// writes (to --log-file or stdout): ncu's own ==PROF== and ==WARNING==
// lines, the program's output, then a header row and one row per
// (launch, metric). Values carry thousands separators ("551,072") and a
// unit column (ns, us, ms, or their long forms).
func parseNCU(r io.Reader) ([]ncuKernel, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading ncu's output: %w", err)
	}
	text := string(data)
	start := strings.Index(text, `"ID","Process ID"`)
	if start < 0 {
		return nil, fmt.Errorf("ncu's output has no CSV table (no \"ID\",\"Process ID\" header): was the run profiled, with --csv?")
	}
	cr := csv.NewReader(strings.NewReader(text[start:]))
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parsing ncu's CSV: %w", err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	kname, mname, unit, value := col("Kernel Name"), col("Metric Name"), col("Metric Unit"), col("Metric Value")
	if kname < 0 || mname < 0 || unit < 0 || value < 0 {
		return nil, fmt.Errorf("ncu's CSV header %q lacks Kernel Name, Metric Name, Metric Unit or Metric Value", rows[0])
	}
	var out []ncuKernel
	for i, row := range rows[1:] {
		if len(row) <= max(kname, mname, unit, value) {
			continue // a trailing line that is not part of the table
		}
		if row[mname] != "gpu__time_duration.sum" {
			continue
		}
		x, err := strconv.ParseFloat(strings.ReplaceAll(row[value], ",", ""), 64)
		if err != nil {
			return nil, fmt.Errorf("ncu CSV row %d: metric value %q: %w", i+2, row[value], err)
		}
		scale, ok := map[string]float64{"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}[row[unit]]
		if !ok {
			return nil, fmt.Errorf("ncu CSV row %d: unknown unit %q", i+2, row[unit])
		}
		out = append(out, ncuKernel{Name: row[kname], NS: x * scale})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ncu's CSV holds no gpu__time_duration.sum: no kernel matched the profile's filter")
	}
	return out, nil
}

// A kernelTime is ncu's median duration of one kernel of a step.
type kernelTime struct {
	Name     string  `json:"name"`
	PerStep  int     `json:"per_step"` // launches of it in one step
	N        int     `json:"n"`        // launches ncu profiled
	MedianUS float64 `json:"median_us"`
}

// stepTime is ncu's time for one step of a point whose launches have the
// given function names (in order, repeats included): the sum over the
// step's kernels of each one's median duration times its launches per
// step. A kernel of the step that ncu never profiled is an error.
func stepTime(names []string, ks []ncuKernel) (float64, []kernelTime, error) {
	per := map[string]int{}
	var order []string
	for _, n := range names {
		if per[n] == 0 {
			order = append(order, n)
		}
		per[n]++
	}
	var total float64
	var out []kernelTime
	for _, n := range order {
		var xs []float64
		for _, k := range ks {
			if k.Name == n {
				xs = append(xs, k.NS)
			}
		}
		if len(xs) == 0 {
			return 0, nil, fmt.Errorf("ncu profiled no launch of %s", n)
		}
		med := stats.Summarize(xs).Median
		total += med * float64(per[n])
		out = append(out, kernelTime{Name: n, PerStep: per[n], N: len(xs), MedianUS: med / 1e3})
	}
	return total, out, nil
}

// mangledName matches the start of an Itanium-mangled function name:
// _Z, the length of the unqualified name, the name.
var mangledName = regexp.MustCompile(`^_Z(\d+)`)

// functionName is the name ncu shows for an entry under its "function"
// kernel-name base: without namespace, template arguments or parameters.
// An entry is an extern "C" name, a C++ name expression
// (ns::partial<__half, 4>) or a mangled symbol (_Z7partialI6__halfLi4EEv…).
func functionName(entry string) string {
	if m := mangledName.FindStringSubmatch(entry); m != nil {
		n, _ := strconv.Atoi(m[1])
		rest := entry[len(m[0]):]
		if n <= len(rest) {
			return rest[:n]
		}
		return entry
	}
	if strings.HasPrefix(entry, "_ZN") {
		// A nested name: N (<len><name>)+ E; the last component is the
		// function.
		rest, last := entry[3:], entry
		for {
			m := regexp.MustCompile(`^(\d+)`).FindString(rest)
			if m == "" {
				return last
			}
			n, _ := strconv.Atoi(m)
			if len(m)+n > len(rest) {
				return last
			}
			last, rest = rest[len(m):len(m)+n], rest[len(m)+n:]
		}
	}
	name := entry
	if i := strings.IndexByte(name, '<'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, "::"); i >= 0 {
		name = name[i+2:]
	}
	return strings.TrimSpace(name)
}
