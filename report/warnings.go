package report

import (
	"fmt"
	"io"
)

// A WarningKind is a class of input problem that did not stop the build.
type WarningKind string

const (
	// WarnDuplicate: the same point (device, shape, configuration, nkv)
	// appears in more than one record; the newest is kept.
	WarnDuplicate WarningKind = "duplicate point"
	// WarnProjection: a projection row was refused because the engine
	// figures cannot hold at that point (see Projection).
	WarnProjection WarningKind = "projection refused"
)

// A Warning is one problem with the input, with the text naming where.
type Warning struct {
	Kind WarningKind `json:"kind"`
	Text string      `json:"text"`
}

// A WarningSummary counts the warnings of one kind and keeps the first
// as an example: hundreds of lines of one kind say no more than one line
// with a count.
type WarningSummary struct {
	Kind    WarningKind `json:"kind"`
	Count   int         `json:"count"`
	Example string      `json:"example"`
	// Meaning says what the kind means and what the report did about it.
	Meaning string `json:"meaning"`
}

var warningMeaning = map[WarningKind]string{
	WarnDuplicate:  "a point measured more than once (the same device, shape, configuration and nkv in several records or files); the newest record of each is kept (report.md's Duplicate points lists each)",
	WarnProjection: "the landed kernel's attention time × layers exceeds the step time at these points, so the step has no room for the rest of the model; no projection is printed there",
}

// SummariseWarnings returns one summary per warning kind, in the order
// the kinds first occur.
func SummariseWarnings(ws []Warning) []WarningSummary {
	var out []WarningSummary
	at := map[WarningKind]int{}
	for _, w := range ws {
		i, ok := at[w.Kind]
		if !ok {
			i = len(out)
			at[w.Kind] = i
			out = append(out, WarningSummary{Kind: w.Kind, Example: w.Text, Meaning: warningMeaning[w.Kind]})
		}
		out[i].Count++
	}
	return out
}

// WriteWarnings writes one line per warning kind, for a terminal's error
// stream: "warning: 260 × duplicate point (…), e.g. …".
func (rep *Report) WriteWarnings(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, s := range SummariseWarnings(rep.Warnings) {
		ew.printf("warning: %s\n", s)
	}
	return ew.err
}

// String renders the summary on one line: "260 × duplicate point: …".
func (s WarningSummary) String() string {
	return fmt.Sprintf("%d × %s: %s; e.g. %s", s.Count, s.Kind, s.Meaning, s.Example)
}
