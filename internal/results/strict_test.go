package results

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"runtime"
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

// A line longer than MaxLineBytes is a syntax error, skipped without
// being held, and the lines after it still read; an input with no newline
// at all (/dev/zero) ends in a read error that says why, not an
// out-of-memory crash.
func TestReaderBoundsLineLength(t *testing.T) {
	good := `{"schema":1,"hash":"h","status":"ok"}` + "\n"
	in := io.MultiReader(io.LimitReader(zeros{}, MaxLineBytes+1<<20), strings.NewReader("\n"+good))
	r := NewReader(in, "long.jsonl")
	var errs []error
	n := 0
	for r.Scan() {
		if _, err := r.Record(); err != nil {
			errs = append(errs, err)
		} else {
			n++
		}
	}
	if r.Err() != nil || n != 1 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "long.jsonl:1: a line of 17825793 bytes, longer than") {
		t.Fatalf("Err() = %v, %d record(s), warnings %v; want the long line skipped and the next read", r.Err(), n, errs)
	}
	r = NewReader(io.LimitReader(zeros{}, MaxSkipBytes+1<<20), "/dev/zero")
	for r.Scan() {
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "line 1: more than") {
		t.Fatalf("Err() = %v, want a line-length error", err)
	}
	// A long but bounded line is still a line.
	long := bytes.Repeat([]byte("x"), 200<<10)
	r = NewReader(bytes.NewReader(append(long, '\n')), "long")
	if !r.Scan() || r.Err() != nil {
		t.Fatalf("a 200 KiB line was not read: %v", r.Err())
	}
}

// TestLineReaderHoldsNoLongLine: the bytes of a skipped line are not
// kept: reading a line several times the bound allocates about the bound,
// not the line.
func TestLineReaderHoldsNoLongLine(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lr := NewLineReader(io.LimitReader(zeros{}, 8*MaxLineBytes))
	b, skipped, err := lr.Next()
	runtime.ReadMemStats(&after)
	if b != nil || skipped != 8*MaxLineBytes || err != io.EOF {
		t.Fatalf("Next() = %d bytes, %d skipped, %v", len(b), skipped, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*MaxLineBytes {
		t.Errorf("reading a %d MiB line allocated %d MiB", 8*MaxLineBytes>>20, grew>>20)
	}
	if lr.Long() != 1 || lr.Line() != 1 {
		t.Errorf("Long() = %d, Line() = %d, want 1 and 1", lr.Long(), lr.Line())
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestReaderNamesForeignInput: a gzip file was thousands of "malformed
// record" lines (it is now read through its decompression, and a stream
// cut short or compressed twice is a read error), a BOM one, and a type
// error named Go types.
func TestReaderNamesForeignInput(t *testing.T) {
	gzipped := func(b []byte) []byte {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(b)
		zw.Close()
		return gz.Bytes()
	}
	two := []byte(`{"schema":1,"hash":"h","status":"ok"}` + "\n" + `{"schema":1,"hash":"i","status":"ok"}` + "\n")
	recs, warns, err := readAll(gzipped(two))
	if err != nil || len(warns) != 0 || len(recs) != 2 || recs[1].Hash != "i" {
		t.Errorf("gzip: %d records, %v, %d warnings", len(recs), err, len(warns))
	}
	gz := gzipped(two)
	for name, in := range map[string][]byte{"cut short": gz[:len(gz)-12], "header only": gz[:5], "twice": gzipped(gz)} {
		if _, _, err := readAll(in); err == nil || !strings.Contains(err.Error(), "gzip") {
			t.Errorf("gzip %s: %v, want a read error naming gzip", name, err)
		}
	}
	for in, want := range map[string]string{
		"\xef\xbb\xbf" + `{"schema":1,"hash":"h"}` + "\n": "x.jsonl:1: starts with a UTF-8 byte-order mark",
		"[1,2]\n": "x.jsonl:1: malformed record: the line is a JSON array, not an object",
		`{"schema":1,"hash":"h","probes":"x"}` + "\n": "probes is a JSON string where the format has a list",
		`{"schema":"1","hash":"h"}` + "\n":            "schema is a JSON string where the format has an integer",
	} {
		_, warns, err := readAll([]byte(in))
		if err != nil || len(warns) != 1 || !strings.Contains(warns[0].Error(), want) || strings.Contains(warns[0].Error(), "Go ") {
			t.Errorf("%q: %v %v; want %q", in, warns, err, want)
		}
	}
}

func readAll(b []byte) (recs []Record, warns []error, err error) {
	r := NewReader(bytes.NewReader(b), "x.jsonl")
	for r.Scan() {
		rec, err := r.Record()
		if err != nil {
			warns = append(warns, err)
			continue
		}
		recs = append(recs, rec)
	}
	return recs, warns, r.Err()
}
