package results

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
)

// FileName is the name of the results file inside a sweep directory.
const FileName = "results.jsonl"

// FilePath returns the results file of the sweep directory dir.
func FilePath(dir string) string { return filepath.Join(dir, FileName) }

// A SyntaxError reports a line of a results file that is not a record this
// build can read. Readers return it as a warning and keep going: one bad
// line never costs the good ones.
type SyntaxError struct {
	File string // file name as given to the reader
	Line int    // 1-based line number
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// truncatedMsg is the message for a last line that ends without a newline
// and does not parse: the signature of a process killed mid-write, since
// Append writes a whole line with one write call.
const truncatedMsg = "truncated last line (a crash mid-write?)"

// A Reader streams the records of one results file.
//
//	r := results.NewReader(f, name)
//	for r.Scan() {
//		rec, err := r.Record()
//		if err != nil { warnings = append(warnings, err); continue }
//		…
//	}
//	if err := r.Err(); err != nil { … }
type Reader struct {
	lr   *LineReader
	file string
	line int
	rec  Record
	err  error // the current line's *SyntaxError, if any
	ioer error // a read error other than EOF
}

// NewReader returns a Reader of r; file names r in error messages. A
// gzip-compressed file (results kept as .jsonl.gz) is read through its
// decompression: a stream cut short is a read error, never a shorter
// file.
func NewReader(r io.Reader, file string) *Reader {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(len(gzipMagic)); bytes.Equal(magic, gzipMagic) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return &Reader{lr: NewLineReader(bytes.NewReader(nil)), file: file, ioer: fmt.Errorf("reading %s: gzip: %w", file, err)}
		}
		return &Reader{lr: NewLineReader(gzipErrors{gz}), file: file}
	}
	return &Reader{lr: NewLineReader(br), file: file}
}

// gzipErrors names the decompression in its read errors: "gzip:
// unexpected EOF" is a file cut short, not a line.
type gzipErrors struct{ r io.Reader }

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gzip: %w", err)
	}
	return n, err
}

// Scan advances to the next non-blank line. It returns false at the end of
// the input or on a read error (see Err). A line longer than MaxLineBytes
// is a *SyntaxError, read past without being held.
func (r *Reader) Scan() bool {
	if r.ioer != nil {
		return false
	}
	for {
		// Not bufio.Scanner: a record carries an NVRTC log and up to
		// thousands of samples, so its line is long; but not unbounded
		// either, or a file without newlines costs all memory.
		b, skipped, err := r.lr.Next()
		r.line = r.lr.Line()
		if errors.Is(err, ErrNoNewline) {
			r.ioer = fmt.Errorf("reading %s: %w", r.file, err)
			return false
		}
		if err != nil && !errors.Is(err, io.EOF) {
			r.ioer = fmt.Errorf("reading %s: %w", r.file, err)
			return false
		}
		if r.line == 1 && bytes.HasPrefix(b, gzipMagic) {
			// Binary lines would each be a warning, thousands of them.
			r.ioer = fmt.Errorf("reading %s: gzip-compressed data inside gzip (it starts with 1f 8b once decompressed), not JSON lines", r.file)
			return false
		}
		if skipped > 0 {
			r.rec, r.err = Record{}, &SyntaxError{File: r.file, Line: r.line, Msg: TooLong(skipped)}
			return true
		}
		if len(b) == 0 && err != nil {
			return false
		}
		last := err != nil // EOF without a newline
		trimmed := bytes.TrimSpace(b)
		if len(trimmed) == 0 {
			if last {
				return false
			}
			continue
		}
		r.rec, r.err = Record{}, nil
		if r.line == 1 && bytes.HasPrefix(trimmed, utf8BOM) {
			r.err = &SyntaxError{File: r.file, Line: r.line, Msg: "starts with a UTF-8 byte-order mark (EF BB BF), which JSON lines do not have: an editor added it; remove it"}
			return true
		}
		if msg, malformed := decodeLine(trimmed, &r.rec); msg != "" {
			if last && malformed {
				msg = truncatedMsg
			}
			r.err = &SyntaxError{File: r.file, Line: r.line, Msg: msg}
		}
		return true
	}
}

// Record returns the current record, or a *SyntaxError when the current
// line is not a record this build can read.
func (r *Reader) Record() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	return r.rec, nil
}

// Err returns the read error that stopped Scan, or nil at a clean end.
// Syntax errors are not read errors: Record returns them line by line.
func (r *Reader) Err() error { return r.ioer }

// decodeLine parses one line into rec and returns "" or what is wrong;
// malformed is set when the line is not even valid JSON.
func decodeLine(line []byte, rec *Record) (msg string, malformed bool) {
	// A line that decodes whole with a version this build reads is the
	// common case, and decoding its version on its own first would read
	// it twice. Any other line is judged as the version alone says (the
	// caller drops rec with the message).
	if err := json.Unmarshal(line, rec); err != nil || rec.Schema < 1 || rec.Schema > SchemaVersion {
		if msg, malformed := schemaMsg(line); msg != "" {
			return msg, malformed
		}
		if err != nil {
			return "malformed record: " + jsonMsg(err), false
		}
	}
	if msg := strictCheck(line); msg != "" {
		return msg, false
	}
	if rec.Hash == "" {
		return "record has no hash", false
	}
	return "", false
}

// schemaMsg reads the version of line on its own, so that a newer layout
// is refused by name rather than by whatever field no longer decodes:
// "" when it is one this build reads, else what is wrong; malformed is
// set when the line is not even valid JSON.
func schemaMsg(line []byte) (msg string, malformed bool) {
	var head struct {
		Schema *int `json:"schema"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return "malformed record: " + jsonMsg(err), true
	}
	switch {
	case head.Schema == nil:
		return "not a ktune record: no schema version", false
	case *head.Schema > SchemaVersion:
		return fmt.Sprintf("written by a newer ktune (schema %d; this build reads ≤ %d)", *head.Schema, SchemaVersion), false
	case *head.Schema < 1:
		return fmt.Sprintf("invalid schema version %d", *head.Schema), false
	}
	return "", false
}

// The first bytes of what is not a results file, named as such.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	utf8BOM   = []byte{0xef, 0xbb, 0xbf}
)

// jsonMsg says what encoding/json found wrong in the words of the format:
// its type errors name Go types ("cannot unmarshal array into Go value of
// type struct { Schema *int … }"), which say nothing to whoever wrote the
// line.
func jsonMsg(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (byte %d)", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("the line is a JSON %s, not an object", te.Value)
		}
		return fmt.Sprintf("%s is a JSON %s where the format has %s (byte %d)", te.Field, te.Value, jsonKind(te.Type), te.Offset)
	}
	return err.Error()
}

// jsonKind names a Go type as the JSON value it decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
}

// ReadFile reads every record of one results file. Lines it cannot read
// come back as warnings (*SyntaxError); err is set only when the file
// itself cannot be read.
func ReadFile(path string) (recs []Record, warnings []error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading results: %w", err)
	}
	defer f.Close()
	r := NewReader(f, path)
	for r.Scan() {
		rec, err := r.Record()
		if err != nil {
			warnings = append(warnings, err)
			continue
		}
		recs = append(recs, rec)
	}
	return recs, warnings, r.Err()
}

// ReadFiles reads several results files in order and concatenates their
// records and warnings.
func ReadFiles(paths ...string) (recs []Record, warnings []error, err error) {
	for _, p := range paths {
		r, w, err := ReadFile(p)
		recs = append(recs, r...)
		warnings = append(warnings, w...)
		if err != nil {
			return recs, warnings, err
		}
	}
	return recs, warnings, nil
}

// A Set is the current content of one or more results files.
type Set struct {
	// Records holds one record per hash and file, in file order: a later
	// line with the same hash replaces an earlier one in place.
	Records []Record
	// Warnings lists the lines that were skipped (*SyntaxError).
	Warnings []error
	// Replaced counts the records superseded by a later line.
	Replaced int
}

// Load reads results for reporting. Each path is a results file or a sweep
// directory holding one. Within a file the last record of a hash wins
// (`ktune sweep --force` appends a new measurement of a recorded point);
// records of different files are all kept, since two files are two runs
// (two machines, two dates) that a report may want side by side.
func Load(paths ...string) (*Set, error) {
	s := &Set{}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = FilePath(p)
		}
		recs, warns, err := ReadFile(p)
		s.Warnings = append(s.Warnings, warns...)
		if err != nil {
			return s, err
		}
		latest, n := Latest(recs)
		s.Records = append(s.Records, latest...)
		s.Replaced += n
	}
	return s, nil
}

// Latest keeps the last record of each hash, at the position of its first
// occurrence, and returns how many records were superseded.
func Latest(recs []Record) (out []Record, replaced int) {
	at := make(map[string]int, len(recs))
	for _, r := range recs {
		if i, ok := at[r.Hash]; ok {
			out[i] = r
			replaced++
			continue
		}
		at[r.Hash] = len(out)
		out = append(out, r)
	}
	return out, replaced
}

// syncFile is what a Writer needs of its file; tests substitute it to
// observe the write/fsync order.
type syncFile interface {
	io.Writer
	Sync() error
	Close() error
}

// A Writer appends records to a results file. It is not safe for
// concurrent use; one process per directory is ensured by Lock.
type Writer struct {
	f       syncFile
	path    string
	dropped int
	broken  error // set after a failed write: appending more would glue lines
}

// OpenWriter opens dir/results.jsonl for appending, creating dir and the
// file as needed. A last line left without its newline by a crash is cut
// off first, so that the next record starts on a line of its own; its
// point simply runs again (DroppedTail reports the cut). A complete record
// that only lacks the final newline (an edited file) is kept.
func OpenWriter(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating results directory: %w", err)
	}
	path := FilePath(dir)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening results file: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// A new directory entry is durable only once its directory is
		// synced; without this a crash could lose the whole file.
		syncDir(dir)
	}
	w := &Writer{f: f, path: path}
	if err := w.repairTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening results file %s: %w", path, err)
	}
	return w, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems refuse to sync a directory
		d.Close()
	}
}

// repairTail makes the file end with a newline (see OpenWriter).
func (w *Writer) repairTail(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	start, err := lastLineStart(f, size)
	if err != nil {
		return err
	}
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil {
		return err
	}
	var rec Record
	if msg, _ := decodeLine(bytes.TrimSpace(tail), &rec); msg == "" {
		_, err := f.Write([]byte{'\n'})
		return err
	}
	if err := f.Truncate(start); err != nil {
		return err
	}
	w.dropped = int(size - start)
	return f.Sync()
}

// lastLineStart returns the offset just after the last newline before size.
func lastLineStart(f *os.File, size int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := size; end > 0; {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// DroppedTail returns the size in bytes of the truncated last line that
// OpenWriter cut off, 0 if the file ended cleanly.
func (w *Writer) DroppedTail() int { return w.dropped }

// Append sets rec.Schema, writes rec as one line and fsyncs before
// returning: a record that Append accepted survives a crash or power loss
// a moment later, and a crash during the write can at worst leave a
// truncated last line, which readers report and OpenWriter removes.
func (w *Writer) Append(rec *Record) error {
	if w.broken != nil {
		return fmt.Errorf("appending to %s: an earlier write failed: %w", w.path, w.broken)
	}
	rec.Schema = SchemaVersion
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding record %s: %w", rec.Hash, err)
	}
	b = append(b, '\n')
	// One write call per line: O_APPEND then places the line whole, and a
	// crash can only cut it, never interleave it with another.
	if _, err := w.f.Write(b); err != nil {
		w.broken = err
		return fmt.Errorf("appending record %s to %s: %w", rec.Hash, w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		w.broken = err
		return fmt.Errorf("syncing %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", w.path, err)
	}
	return nil
}
