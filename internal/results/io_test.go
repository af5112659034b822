package results

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/golden"
)

// fullRecord returns a record with every field set to a non-zero value, so
// that a round trip that drops or renames a field is caught.
func fullRecord(hash string) Record {
	return Record{
		Schema: SchemaVersion,
		Hash:   hash,
		Time:   time.Date(2026, 11, 30, 22, 41, 0, 123000000, time.UTC),
		Config: Config{
			Spec: "slice", Variant: "d2", Kernel: "d2",
			Defines: []Define{{Name: "NR", Value: "4"}, {Name: "SPLITS", Value: "32"}},
			Shape: Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "fp8e4m3", KVScale: "head", Batch: 2, Capacity: 32768,
				Attention: abi.Attention{Softcap: 30, ALiBi: abi.ALiBiBuffer, Sinks: true, Window: 4096, QLen: 4, MLA: abi.MLA{DV: 64, Layout: abi.MLASplit}, LSE: abi.LSELog2}},
			NKV: 32768, Lengths: []int{32768, 1000}, Splits: 32,
			Grid: [3]int{32, 28, 2}, Block: [3]int{32, 1, 1}, SharedBytes: 4096,
			CombineGrid: [3]int{28, 2, 1}, CombineBlock: [3]int{128, 1, 1},
			BitwiseWith: "r4", Fixture: true,
		},
		Env: Env{
			Device: "NVIDIA H200", DeviceIndex: 1, UUID: "GPU-1234", Arch: "sm_90", SMs: 132,
			L2Bytes: 60 << 20, MemBytes: 141 << 30, Driver: "13.0", NVRTC: "13.0",
			ClockMHz: 1980, MemClockMHz: 3201, ReadBWGBps: 4560.1, Host: "h200-a", Ktune: "v0.1.0",
		},
		Status: StatusGateFailed,
		Error:  "some text",
		Compile: Compile{Seconds: 1.5, Cached: true, Flags: []string{"-lineinfo"}, Log: "warning: x", Artifact: "ptx sha256:00ff",
			Symbols: map[string]string{"eng::decode<128>": "_ZN3eng6decodeILi128EEEvPf"}},
		Resources: []Resource{{
			Kernel: "attn_partial", Registers: 96, LocalBytes: 8, StaticShared: 512, DynamicShared: 4096,
			MaxBlocksPerSM: 16, Occupancy: 0.5, LoadsBeforeChain: 4,
		}},
		Gates: []Gate{{
			Kind: GateTolerance, NKV: 1641, Pass: true, Seed: 7, Twin: "r4",
			MaxAbs: 1e-4, MaxRel: 2e-3, NMSE: 1e-9, NaNs: 1,
			DiffBytes: 3, FirstDiff: 12, Buffer: "out", Detail: "d", Inputs: "peaked", Waiver: "peaked: own bounds (r)",
		}},
		Waivers: []string{"subnormal: not applicable (r)"},
		Probes: []Measurement{{
			Probe: ProbeCold, SamplesNS: []float64{84400, 84500.5},
			Summary:   Summary{N: 2, Median: 84450, Min: 84400, Max: 84500.5, Q1: 84400, Q3: 84500.5, RelNoise: 0.001},
			Converged: true, Note: "n", Bytes: 1 << 20, GBps: 12.4, PctBW: 0.3, ClockMHz: 1980, Throttled: 1, Batch: 20,
			Energy: &Energy{Method: EnergyMethodNVML, Steps: 40000, WindowNS: 4.1e8, EnergyMJ: 96000, UJPerStep: 2400, PowerBeforeMW: 120500, PowerAfterMW: 240250,
				CounterPeriodNS: 2e7, NeededNS: 4e8, RelBound: 0.05, Unmeasurable: "u"},
		}},
		WallSec: 3.25, GateSec: 0.5,
		GateCost:  &GateCost{Inputs: 0.125, Oracle: 0.0625, Upload: 0.1, Device: 0.2, Host: 0.0125},
		Landed:    true,
		Replayed:  &Replay{Match: ReplayConfig, Hash: "0123456789abcdef"},
		GateSuite: "r1: tolerance",
	}
}

// zeroFields lists the paths of zero-valued fields under v.
func zeroFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.Interface().(time.Time).IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := 0; i < v.NumField(); i++ {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	case reflect.Slice:
		if v.Len() == 0 {
			return []string{path}
		}
		var out []string
		for i := 0; i < v.Len(); i++ {
			out = append(out, zeroFields(v.Index(i), path+"[]")...)
		}
		return out
	}
	if v.IsZero() {
		return []string{path}
	}
	return nil
}

func TestRoundTripEveryField(t *testing.T) {
	in := fullRecord("h1")
	if z := zeroFields(reflect.ValueOf(in), "Record"); len(z) > 0 {
		t.Fatalf("fixture leaves fields unset, so their round trip is untested: %v", z)
	}
	dir := t.TempDir()
	w, err := OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := in
	rec.Schema = 0 // Append must set it
	if err := w.Append(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.Schema != SchemaVersion {
		t.Errorf("Append left Schema = %d, want %d", rec.Schema, SchemaVersion)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, warns, err := ReadFile(FilePath(dir))
	if err != nil || len(warns) > 0 {
		t.Fatalf("ReadFile: %v, warnings %v", err, warns)
	}
	if len(recs) != 1 {
		t.Fatalf("read %d records, want 1", len(recs))
	}
	if !reflect.DeepEqual(recs[0], in) {
		t.Errorf("round trip changed the record:\n got %+v\nwant %+v", recs[0], in)
	}
}

// fakeFile logs the calls a Writer makes on its file.
type fakeFile struct {
	calls []string
	buf   bytes.Buffer
}

func (f *fakeFile) Write(b []byte) (int, error) {
	f.calls = append(f.calls, "write "+strings.TrimSpace(string(b))[:20])
	return f.buf.Write(b)
}
func (f *fakeFile) Sync() error  { f.calls = append(f.calls, "sync"); return nil }
func (f *fakeFile) Close() error { return nil }

func TestAppendSyncsEachLineInOrder(t *testing.T) {
	ff := &fakeFile{}
	w := &Writer{f: ff, path: "fake"}
	for _, h := range []string{"a", "b", "c"} {
		r := Record{Hash: h, Status: StatusOK}
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
		// The record must be on disk before Append returns.
		if last := ff.calls[len(ff.calls)-1]; last != "sync" {
			t.Fatalf("Append(%s) returned after %q, not after a sync", h, last)
		}
	}
	var kinds []string
	for _, c := range ff.calls {
		kinds = append(kinds, strings.Fields(c)[0])
	}
	if got := strings.Join(kinds, ","); got != "write,sync,write,sync,write,sync" {
		t.Errorf("calls = %s", got)
	}
	r := NewReader(&ff.buf, "fake")
	var order []string
	for r.Scan() {
		rec, err := r.Record()
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, rec.Hash)
	}
	if got := strings.Join(order, ""); got != "abc" {
		t.Errorf("read back order %q, want abc", got)
	}
}

type failFile struct{ fakeFile }

func (f *failFile) Write(b []byte) (int, error) { return len(b) / 2, errors.New("disk full") }

func TestAppendAfterFailedWriteRefuses(t *testing.T) {
	w := &Writer{f: &failFile{}, path: "fake"}
	r := Record{Hash: "a"}
	if err := w.Append(&r); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("first Append: %v, want disk full", err)
	}
	// A second line would be glued to the half-written first one.
	if err := w.Append(&r); err == nil || !strings.Contains(err.Error(), "earlier write failed") {
		t.Fatalf("second Append: %v, want a refusal", err)
	}
}

// writeRecords writes recs with a Writer and returns the file's path.
func writeRecords(t *testing.T, dir string, recs ...Record) string {
	t.Helper()
	w, err := OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return FilePath(dir)
}

func hashes(recs []Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, r.Hash)
	}
	return strings.Join(s, ",")
}

func syntaxErrors(t *testing.T, warns []error) []*SyntaxError {
	t.Helper()
	var out []*SyntaxError
	for _, w := range warns {
		var se *SyntaxError
		if !errors.As(w, &se) {
			t.Fatalf("warning %v is not a *SyntaxError", w)
		}
		out = append(out, se)
	}
	return out
}

func TestTruncatedLastLine(t *testing.T) {
	dir := t.TempDir()
	path := writeRecords(t, dir, fullRecord("a"), fullRecord("b"), fullRecord("c"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the file in the middle of the third line, as a kill -9 during
	// its write would.
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := len(lines[0]) + len(lines[1]) + len(lines[2])/2
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	recs, warns, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := hashes(recs); got != "a,b" {
		t.Errorf("records %s, want a,b", got)
	}
	se := syntaxErrors(t, warns)
	if len(se) != 1 || se[0].Line != 3 || se[0].File != path || se[0].Msg != truncatedMsg {
		t.Fatalf("warnings %v, want one truncated-line error on line 3", warns)
	}
	if want := path + ":3: truncated last line (a crash mid-write?)"; se[0].Error() != want {
		t.Errorf("message %q, want %q", se[0].Error(), want)
	}

	// Reopening for append cuts the torn line, so the next record gets a
	// line of its own and the file reads clean again.
	w, err := OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.DroppedTail() != len(lines[2])/2 {
		t.Errorf("DroppedTail = %d, want %d", w.DroppedTail(), len(lines[2])/2)
	}
	d := fullRecord("d")
	if err := w.Append(&d); err != nil {
		t.Fatal(err)
	}
	w.Close()
	recs, warns, err = ReadFile(path)
	if err != nil || len(warns) != 0 {
		t.Fatalf("after repair: %v, warnings %v", err, warns)
	}
	if got := hashes(recs); got != "a,b,d" {
		t.Errorf("after repair: records %s, want a,b,d", got)
	}
}

func TestCompleteLastLineWithoutNewlineIsKept(t *testing.T) {
	dir := t.TempDir()
	path := writeRecords(t, dir, fullRecord("a"), fullRecord("b"))
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.TrimRight(data, "\n"), 0o644)
	recs, warns, err := ReadFile(path)
	if err != nil || len(warns) != 0 || hashes(recs) != "a,b" {
		t.Fatalf("got %s, %v, %v; want a,b and no warnings", hashes(recs), warns, err)
	}
	w, err := OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.DroppedTail() != 0 {
		t.Errorf("a complete record was dropped (%d bytes)", w.DroppedTail())
	}
	c := fullRecord("c")
	w.Append(&c)
	w.Close()
	recs, warns, _ = ReadFile(path)
	if len(warns) != 0 || hashes(recs) != "a,b,c" {
		t.Fatalf("got %s, %v; want a,b,c", hashes(recs), warns)
	}
}

func TestCorruptMiddleLine(t *testing.T) {
	dir := t.TempDir()
	path := writeRecords(t, dir, fullRecord("a"), fullRecord("b"), fullRecord("c"))
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[1] = append([]byte(`{"schema":1,"hash":"b",`), '\n') // cut but newline-terminated
	os.WriteFile(path, bytes.Join(lines, nil), 0o644)

	recs, warns, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := hashes(recs); got != "a,c" {
		t.Errorf("records %s, want a,c", got)
	}
	se := syntaxErrors(t, warns)
	if len(se) != 1 || se[0].Line != 2 || !strings.HasPrefix(se[0].Msg, "malformed record") {
		t.Fatalf("warnings %v, want one malformed record on line 2", warns)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	in := fullRecord("a")
	newer := `{"schema":2,"hash":"n","config":"a layout this build does not know"}` + "\n"
	var buf bytes.Buffer
	buf.WriteString(newer)
	dir := t.TempDir()
	path := writeRecords(t, dir, in)
	data, _ := os.ReadFile(path)
	buf.Write(data)

	r := NewReader(&buf, "x.jsonl")
	var got []string
	for r.Scan() {
		rec, err := r.Record()
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		got = append(got, rec.Hash)
	}
	want := []string{"x.jsonl:1: written by a newer ktune (schema 2; this build reads ≤ 1)", "a"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestWarningsGolden pins the wording of every line-level message on a
// hand-written file with one problem per line.
func TestWarningsGolden(t *testing.T) {
	path := filepath.Join("testdata", "bad.jsonl")
	recs, warns, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, r := range recs {
		out.WriteString("record " + r.Hash + "\n")
	}
	for _, w := range warns {
		out.WriteString(w.Error() + "\n")
	}
	golden.Check(t, filepath.Join("testdata", "bad.golden"), []byte(out.String()))
}

func TestLoadKeepsLatestPerHash(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	a1, b, a2 := fullRecord("a"), fullRecord("b"), fullRecord("a")
	a1.WallSec, a2.WallSec = 1, 2
	writeRecords(t, dir1, a1, b, a2)
	writeRecords(t, dir2, fullRecord("a"))
	s, err := Load(dir1, FilePath(dir2))
	if err != nil {
		t.Fatal(err)
	}
	if got := hashes(s.Records); got != "a,b,a" {
		t.Fatalf("records %s, want a,b (dir1) then a (dir2)", got)
	}
	if s.Records[0].WallSec != 2 {
		t.Errorf("kept the first measurement of a (wall %v), want the later one", s.Records[0].WallSec)
	}
	if s.Replaced != 1 {
		t.Errorf("Replaced = %d, want 1", s.Replaced)
	}
	if _, err := Load(filepath.Join(dir1, "nope.jsonl")); err == nil {
		t.Error("Load of a missing file: no error")
	}
}
