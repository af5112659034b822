package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// A results line that encoding/json alone would read, but that Append can
// never have written, is damage: each of these edits would turn a failing
// or replayed record into a passing measurement.
func TestStrictDecodingRefusesEdits(t *testing.T) {
	rec := fullRecord("00112233aabbccdd")
	b, err := json.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	line := string(b)
	cases := []struct{ name, old, new, want string }{
		{"duplicate key", `"status":"gate_failed"`, `"status":"gate_failed","status":"ok"`, `"status" given twice`},
		{"case-variant duplicate", `"status":"gate_failed"`, `"status":"gate_failed","Status":"ok"`, "differ only in case"},
		{"re-cased key", `"status":"gate_failed"`, `"STATUS":"gate_failed"`, `is spelt "status"`},
		{"nested duplicate", `"kind":"tolerance"`, `"kind":"tolerance","pass":false`, `"gates[0].pass" given twice`},
		{"re-cased nested key", `"samples_ns"`, `"Samples_NS"`, `is spelt "samples_ns"`},
		{"null replay mark", `"replayed":{"match":"config","hash":"0123456789abcdef"}`, `"replayed":null`, "replayed is null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(line, c.old) {
				t.Fatalf("the record no longer holds %s", c.old)
			}
			edited := strings.Replace(line, c.old, c.new, 1)
			r := NewReader(strings.NewReader(edited+"\n"), "x.jsonl")
			if !r.Scan() {
				t.Fatal("no line")
			}
			_, err := r.Record()
			var se *SyntaxError
			if !errors.As(err, &se) || !strings.Contains(se.Msg, c.want) {
				t.Fatalf("got %v, want a syntax error saying %q", err, c.want)
			}
		})
	}
	// The intact line, and one with a key this build does not know (a
	// field an older build wrote), still read.
	for _, l := range []string{line, strings.Replace(line, `"status"`, `"retired_field":1,"status"`, 1)} {
		r := NewReader(strings.NewReader(l+"\n"), "x.jsonl")
		r.Scan()
		if _, err := r.Record(); err != nil {
			t.Fatalf("an intact line was refused: %v", err)
		}
	}
}

// A line without a newline is bounded: /dev/zero gives a read error that
// says why, not an out-of-memory crash.
func TestReaderBoundsLineLength(t *testing.T) {
	r := NewReader(io.LimitReader(zeros{}, MaxLineBytes+1<<20), "/dev/zero")
	for r.Scan() {
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "line 1: longer than") {
		t.Fatalf("Err() = %v, want a line-length error", err)
	}
	// A long but bounded line is still a line.
	long := bytes.Repeat([]byte("x"), 200<<10)
	r = NewReader(bytes.NewReader(append(long, '\n')), "long")
	if !r.Scan() || r.Err() != nil {
		t.Fatalf("a 200 KiB line was not read: %v", r.Err())
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
