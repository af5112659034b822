package results

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the results reader. Whatever the
// input, it must not panic, every line must come back as a record or as a
// *SyntaxError naming a line that exists, and every record it accepts must
// survive a marshal round trip (what it reads, a writer could have
// written). Gzip data is read through its decompression; the only read
// error is gzip data that does not decompress, named as such.
func FuzzReader(f *testing.F) {
	for _, p := range []string{"testdata/bad.jsonl", "../../experiments/results/h200/rerun.jsonl"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
			if i := bytes.IndexByte(b, '\n'); i > 0 {
				f.Add(b[:i/2]) // a torn first line
			}
		}
	}
	f.Add([]byte(`{"schema":1,"hash":"ab","status":"ok"}` + "\n"))
	f.Add([]byte(`{"schema":99}` + "\n"))
	f.Add([]byte("\n\n{}\n{\"schema\":1"))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"schema":1,"hash":"ab","status":"ok"}` + "\n" + `{"schema":1,"hash":`))
	zw.Close()
	f.Add(gz.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		plain := data
		if bytes.HasPrefix(data, gzipMagic) {
			if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
				plain, _ = io.ReadAll(zr)
			}
		}
		lines := strings.Count(string(plain), "\n") + 1
		r := NewReader(bytes.NewReader(data), "fuzz.jsonl")
		for r.Scan() {
			rec, err := r.Record()
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("error %T %v is not a *SyntaxError", err, err)
				}
				if se.Line < 1 || se.Line > lines {
					t.Fatalf("line %d outside 1..%d: %v", se.Line, lines, se)
				}
				if !strings.HasPrefix(se.Error(), "fuzz.jsonl:") {
					t.Fatalf("error does not name the file: %v", se)
				}
				continue
			}
			if rec.Schema > SchemaVersion {
				t.Fatalf("accepted schema %d", rec.Schema)
			}
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatalf("accepted a record that cannot be written back: %v", err)
			}
			var back Record
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("round trip: %v", err)
			}
		}
		if err := r.Err(); err != nil && !(bytes.HasPrefix(data, gzipMagic) && strings.Contains(err.Error(), "gzip")) {
			t.Fatalf("read error on an in-memory reader: %v", err)
		}
	})
}
