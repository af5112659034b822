package report

// The tests of this package run on the committed H200 results under
// experiments/results/h200. Three gate cases cannot come from a real run,
// because no committed kernel is slower than the landed one by a known
// amount, differs from its twin by one byte, or repeats it within noise
// under another name. testdata/gate.jsonl holds those candidates, made by
// transforming the real records of the landed configuration (d2
// SPLITS=32 in slice.jsonl):
//
//   - slow: every sample ×1.10, a 10% slowdown;
//   - onebyte: the bitwise gate of out against r4 at nkv=29 flipped to
//     failed with one differing byte, the point then ending as gate_failed
//     without timings, as a sweep records it;
//   - same: a bootstrap resample (with replacement, fixed seed) of the
//     landed samples: the landed kernel again, within its own noise.
//
// The file is regenerated with `go test ./report/... -update` and a test
// checks the committed file still equals the generator's output.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/results"
)

// h200Dir holds the committed results of the H200 runs, relative to this
// package's directory (where go test runs).
const h200Dir = "../experiments/results/h200"

// loadH200 reads one committed results file with the project's reader and
// fails on any line it had to skip: these files are the test inputs. Each
// file is read once per test binary (reading them was half the package's
// CPU); every call gets a deep copy, so a test may edit what it gets.
func loadH200(t testing.TB, name string) []results.Record {
	t.Helper()
	h200Cache.mu.Lock()
	defer h200Cache.mu.Unlock()
	if recs, ok := h200Cache.files[name]; ok {
		return deepCopy(recs)
	}
	recs, warns, err := results.ReadFile(filepath.Join(h200Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		t.Errorf("%s: %v", name, w)
	}
	if len(recs) == 0 {
		t.Fatalf("%s: no records", name)
	}
	if h200Cache.files == nil {
		h200Cache.files = map[string][]results.Record{}
	}
	h200Cache.files[name] = recs
	return deepCopy(recs)
}

// h200Cache holds each committed file's records as first read.
var h200Cache struct {
	mu    sync.Mutex
	files map[string][]results.Record
}

// deepCopy copies x and everything its exported fields reach (slices,
// maps, pointers), so that no edit of the copy shows in x.
func deepCopy[T any](x T) T {
	return copyValue(reflect.ValueOf(&x).Elem()).Interface().(T)
}

func copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(copyValue(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(copyValue(it.Key()), copyValue(it.Value()))
		}
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(copyValue(v.Elem()))
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(copyValue(v.Elem()))
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v) // unexported fields (time.Time's) as they are
		for i := range v.NumField() {
			if n.Field(i).CanSet() {
				n.Field(i).Set(copyValue(v.Field(i)))
			}
		}
		return n
	}
	return v
}

// quantile is the linear-interpolation quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}

// resummarise recomputes m's summary and bandwidth from its samples after
// a transformation changed them.
func resummarise(m *results.Measurement, readBW float64) {
	s := append([]float64(nil), m.SamplesNS...)
	sort.Float64s(s)
	med := quantile(s, 0.5)
	m.Summary = results.Summary{N: len(s), Median: med, Min: s[0], Max: s[len(s)-1],
		Q1: quantile(s, 0.25), Q3: quantile(s, 0.75)}
	m.Summary.RelNoise = (m.Summary.Q3 - m.Summary.Q1) / med
	m.GBps = float64(m.Bytes) / med
	m.PctBW = 0
	if readBW > 0 {
		m.PctBW = m.GBps / readBW * 100
	}
}

// relabel returns a deep copy of r as variant name: not landed, with a
// hash of its own so that it never stands for the record it came from.
func relabel(r results.Record, name string) results.Record {
	out := r
	out.Config.Variant = name
	out.Landed = false
	h := fnv.New64a()
	fmt.Fprint(h, name, "/", r.Hash)
	out.Hash = fmt.Sprintf("%016x", h.Sum64())
	out.Gates = append([]results.Gate(nil), r.Gates...)
	out.Probes = make([]results.Measurement, len(r.Probes))
	for i, m := range r.Probes {
		m.SamplesNS = append([]float64(nil), m.SamplesNS...)
		out.Probes[i] = m
	}
	return out
}

// scaleSamples multiplies every sample of every probe of r by f, the
// transformation of a kernel uniformly f times as slow.
func scaleSamples(r *results.Record, f float64) {
	for i := range r.Probes {
		m := &r.Probes[i]
		for j := range m.SamplesNS {
			m.SamplesNS[j] *= f
		}
		resummarise(m, r.Env.ReadBWGBps)
	}
}

// landedRecords returns the records marked landed, in file order.
func landedRecords(recs []results.Record) []results.Record {
	var out []results.Record
	for _, r := range recs {
		if r.Landed {
			out = append(out, r)
		}
	}
	return out
}

// oneByteNKV is the gate nkv at which the onebyte candidate differs.
const oneByteNKV = 29

// gateRecords derives the gate candidates from the landed records of
// slice.jsonl (see the file comment).
func gateRecords(t testing.TB) []results.Record {
	landed := landedRecords(loadH200(t, "slice.jsonl"))
	if len(landed) == 0 {
		t.Fatal("slice.jsonl: no landed records")
	}
	rng := rand.New(rand.NewPCG(11, 13))
	var out []results.Record
	for _, r := range landed {
		slow := relabel(r, "slow")
		scaleSamples(&slow, 1.10)

		one := relabel(r, "onebyte")
		flipped := false
		for i := range one.Gates {
			g := &one.Gates[i]
			if g.Kind == results.GateBitwise && g.NKV == oneByteNKV && g.Buffer == "out" {
				// Byte 2628 is float 657 of out: head 5, dim 17.
				g.Pass, g.DiffBytes, g.FirstDiff = false, 1, 4*(5*128+17)
				flipped = true
			}
		}
		if !flipped {
			t.Fatalf("landed record %s has no bitwise gate at nkv=%d to flip", r.Hash, oneByteNKV)
		}
		one.Status, one.Probes = results.StatusGateFailed, nil

		same := relabel(r, "same")
		for i := range same.Probes {
			m := &same.Probes[i]
			orig := r.Probes[i].SamplesNS
			for j := range m.SamplesNS {
				m.SamplesNS[j] = orig[rng.IntN(len(orig))]
			}
			resummarise(m, same.Env.ReadBWGBps)
		}
		out = append(out, slow, one, same)
	}
	return out
}

func encodeJSONL(recs []results.Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func TestFixturesUpToDate(t *testing.T) {
	golden.Check(t, filepath.Join("testdata", "gate.jsonl"), encodeJSONL(gateRecords(t)))
}

// The transformations do what their names say: slow is 10% slower at
// every probe, same keeps the landed median within the landed spread, and
// onebyte carries exactly one failing gate with one differing byte.
func TestGateFixtureTransforms(t *testing.T) {
	landed := map[int]*results.Record{}
	real := loadH200(t, "slice.jsonl")
	for i := range real {
		if real[i].Landed {
			landed[real[i].Config.NKV] = &real[i]
		}
	}
	for _, r := range loadJSONL(t, "gate.jsonl") {
		base := landed[r.Config.NKV]
		if base == nil {
			t.Fatalf("%s nkv=%d: no landed record", r.Config.Variant, r.Config.NKV)
		}
		switch r.Config.Variant {
		case "slow":
			for i, m := range r.Probes {
				if got := m.Summary.Median / base.Probes[i].Summary.Median; got < 1.0999 || got > 1.1001 {
					t.Errorf("slow nkv=%d %s: median ratio %.4f, want 1.10", r.Config.NKV, m.Probe, got)
				}
			}
		case "same":
			for i, m := range r.Probes {
				b := base.Probes[i].Summary
				if m.Summary.Median < b.Min || m.Summary.Median > b.Max {
					t.Errorf("same nkv=%d %s: median %.0f outside the landed range [%.0f, %.0f]", r.Config.NKV, m.Probe, m.Summary.Median, b.Min, b.Max)
				}
			}
		case "onebyte":
			var failed []results.Gate
			for _, g := range r.Gates {
				if !g.Pass {
					failed = append(failed, g)
				}
			}
			if len(failed) != 1 || failed[0].DiffBytes != 1 || failed[0].Kind != results.GateBitwise || len(r.Probes) != 0 {
				t.Errorf("onebyte nkv=%d: failed gates %+v, %d probes", r.Config.NKV, failed, len(r.Probes))
			}
		default:
			t.Errorf("unexpected variant %q in gate.jsonl", r.Config.Variant)
		}
	}
}

// TestLoadH200Copies: what loadH200 returns is the file as read, and an
// edit of one call's records, however deep, shows in no other call's.
func TestLoadH200Copies(t *testing.T) {
	a := loadH200(t, "rerun.jsonl")
	fresh, _, err := results.ReadFile(filepath.Join(h200Dir, "rerun.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, fresh) {
		t.Fatal("the cached records differ from the file")
	}
	a[0].Probes[0].SamplesNS[0] = -1
	a[0].Config.Defines[0].Value = "edited"
	a[0].Gates[0].Pass = !a[0].Gates[0].Pass
	if b := loadH200(t, "rerun.jsonl"); !reflect.DeepEqual(b, fresh) {
		t.Error("an edit of one call's records showed in the next call's")
	}
}
