package probe

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// Kernels that share a backend share its gate inputs, and nothing else:
// every kernel's gates, defects' included, read exactly as on a backend of
// its own, while the sets and references come from the cache.
func TestInputCacheSharedAcrossKernels(t *testing.T) {
	t.Parallel()
	models := []struct {
		name string
		m    fakeModel
	}{
		{"good", fakeModel{}},
		{"ftz", fakeModel{ftz: true}},
		{"skipnewest", fakeModel{skipNewest: 64}},
		{"readpast", fakeModel{readPast: true}},
		{"offset", fakeModel{offset: 0.01}},
		{"zerotail", fakeModel{zeroTail: 16}},
	}
	f := newFakeDevice()
	shared := fakeBackend(t, f)
	misses := 0
	for i, c := range models {
		f.models[c.name] = c.m
		rec := run(t, shared, fakePoint(c.name, 100))
		alone := newFakeDevice()
		alone.models[c.name] = c.m
		want := run(t, fakeBackend(t, alone), fakePoint(c.name, 100))
		if rec.Status != want.Status || !reflect.DeepEqual(rec.Gates, want.Gates) {
			t.Errorf("%s: on a shared backend %s, failed %v; alone %s, failed %v",
				c.name, rec.Status, failedKinds(rec.Gates), want.Status, failedKinds(want.Gates))
		}
		if c.name != "good" && rec.Status != results.StatusGateFailed {
			t.Errorf("%s: status %s, want a failed gate", c.name, rec.Status)
		}
		// The later kernels of the shape and lengths derive no set.
		if c := shared.inputs; i == 0 {
			misses = c.misses
		} else if c.hits == 0 || c.misses != misses {
			t.Errorf("kernel %d: %d hits, %d misses (the first kernel %d): the sets were derived again", i, c.hits, c.misses, misses)
		}
	}
}

// A set's key holds everything its bytes depend on: two derivations
// that differ in any byte or value have different keys.
func TestSetKeyCoversTheSet(t *testing.T) {
	for _, s := range []abi.Shape{
		{Heads: 8, KVHeads: 2, HeadDim: 16, KVDtype: "f16", Batch: 2, Capacity: 512,
			Attention: abi.Attention{ALiBi: abi.ALiBiStandard, Sinks: true, Window: 40, QLen: 3, LSE: abi.LSELog2}},
		{Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "fp8e4m3", KVScale: kvtype.ScaleHead, Batch: 2, Capacity: 512},
	} {
		base, err := oracle.Generate(s, 200, 5)
		if err != nil {
			t.Fatal(err)
		}
		type variant struct {
			rows, splits int
			lengths      []int
		}
		vs := []variant{{200, 8, []int{200, 150}}, {200, 8, []int{190, 150}}, {200, 4, []int{200, 150}}, {180, 8, []int{180, 150}}}
		for _, set := range oracle.SetsFor(s) {
			var ins []*oracle.Inputs
			var keys []setKey
			for _, v := range vs {
				rows := v.rows
				if set.PerLength() {
					rows = slices.Max(v.lengths)
				}
				in, err := oracle.FromBase(set, base, rows, v.lengths, v.splits)
				if err != nil {
					t.Fatal(err)
				}
				ins = append(ins, in)
				keys = append(keys, keyOfSet(inputsKey{s, 5}, set, rows, base.Rows, v.lengths, v.splits, abi.F32))
			}
			for i := range ins {
				for j := range i {
					same := bytes.Equal(ins[i].KBytes, ins[j].KBytes) && bytes.Equal(ins[i].VBytes, ins[j].VBytes) &&
						slices.Equal(ins[i].Q, ins[j].Q) && slices.Equal(ins[i].Sinks, ins[j].Sinks) && slices.Equal(ins[i].KScale, ins[j].KScale)
					if !same && keys[i] == keys[j] {
						t.Errorf("%s %s: derivations %v and %v differ under one key %+v", s.KVDtype, set, vs[i], vs[j], keys[i])
					}
				}
			}
		}
	}
}

// The cache evicts the least recently used set past its bound, keeps no
// set larger than the bound, and a reference it holds is the oracle's.
func TestInputCacheBound(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "f16", Batch: 1, Capacity: 512}
	base, err := oracle.Generate(s, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	one := inputsBytes(base)
	c := newInputCache(2*one + one/2)
	derived := 0
	get := func(seed uint64) *oracle.Inputs {
		in, err := c.set(setKey{inputs: inputsKey{s, seed}, rows: 100}, func() (*oracle.Inputs, error) {
			derived++
			return oracle.Generate(s, 100, seed)
		})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	get(1)
	get(2)
	get(1) // 1 is now the most recent
	get(3) // evicts 2
	get(1)
	if get(2); derived != 4 || len(c.sets) != 2 || c.used > c.limit {
		t.Errorf("%d derivations, %d sets, %d of %d bytes", derived, len(c.sets), c.used, c.limit)
	}
	in := get(2)
	want, err := oracle.References(in, [][]int{{50}, {100}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := c.references(in, [][]int{{100}, {50}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].Out, want[1].Out) || !slices.Equal(got[1].Out, want[0].Out) {
			t.Error("a cached reference differs from the oracle's")
		}
	}
	// The long gates' tiled view keeps references of its own.
	tiled := c.tiled(in)
	if c.tiled(in) != tiled || !tiled.Tiled || in.Tiled {
		t.Fatal("the tiled view is not one marked copy of the set")
	}
	long := [][]int{{100}, {300}}
	wantTiled, err := oracle.References(&oracle.Inputs{Shape: in.Shape, Seed: in.Seed, Rows: in.Rows, Q: in.Q, K: in.K, V: in.V, Tiled: true}, long)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := c.references(tiled, long)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].Out, wantTiled[0].Out) || !slices.Equal(got[1].Out, wantTiled[1].Out) {
			t.Error("a cached tiled reference differs from the oracle's")
		}
	}
	small := newInputCache(one - 1)
	if _, err := small.set(setKey{rows: 100}, func() (*oracle.Inputs, error) { return base, nil }); err != nil || len(small.sets) != 0 {
		t.Errorf("a set larger than the bound was kept")
	}
}

// A later kernel whose longest gate length passes the first's, as one of
// another SPLITS does, derives its sets from the base the first drew
// (drawn with rows to spare, baseRowsFor), and its gates read as on a
// backend of its own, a defect's included.
func TestBaseSharedAcrossSplits(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"good", "readpast"} {
		model := fakeModel{readPast: m == "readpast"}
		f := newFakeDevice()
		f.models[m] = model
		shared := fakeBackend(t, f)
		run(t, shared, fakePoint(m, 100))
		base := shared.base.in
		later := fakePoint(m, 100)
		later.Hash, later.GateKey = later.Hash+"-s16", later.GateKey+"-s16"
		later.Config.Splits, later.Config.Defines = 16, abi.Defines{{Name: "SPLITS", Value: "16"}}
		later.GateNKV = append(slices.Clone(later.GateNKV), 200)
		rec := run(t, shared, later)
		if shared.base.in != base {
			t.Errorf("%s: the later kernel drew its base again (%d rows, the first's %d)", m, shared.base.in.Rows, base.Rows)
		}
		// And one of shorter lengths: its large set is the first rows of
		// the longer kernel's (oracle.InputSet.RowsNest).
		shorter := fakePoint(m, 64)
		shorter.Hash, shorter.GateKey = shorter.Hash+"-s4", shorter.GateKey+"-s4"
		shorter.Config.Splits, shorter.Config.Defines = 4, abi.Defines{{Name: "SPLITS", Value: "4"}}
		shorter.GateNKV = []int{1, 4, 5, 8, 9, 17, 29, 64}
		recShort := run(t, shared, shorter)
		l, err := pointLayout(shorter)
		if err != nil {
			t.Fatal(err)
		}
		e := shared.inputs.sets[keyOfSet(keyOf(shorter), oracle.SetLarge, 64, baseRowsFor(64, shorter.Config.Shape), nil, 4, l.qDtype)]
		if e == nil {
			t.Fatalf("%s: no large set of 64 rows cached", m)
		}
		// Its V is the longer set's (scaled from the base's once), its K
		// the base's with the spike rows patched.
		if k, v := e.in.Strides(); v != 100 || k != base.Rows {
			t.Errorf("%s: the shorter kernel's large set has K of %d rows per sequence and V of %d, want the base's K (%d) and a view of the first kernel's 100-row V", m, k, v, base.Rows)
		}
		for _, c := range []struct {
			p   *plan.Point
			rec results.Record
		}{{later, rec}, {shorter, recShort}} {
			alone := newFakeDevice()
			alone.models[m] = model
			want := run(t, fakeBackend(t, alone), c.p)
			if c.rec.Status != want.Status || !reflect.DeepEqual(c.rec.Gates, want.Gates) {
				t.Errorf("%s %s: on a shared backend %s, failed %v; alone %s, failed %v",
					m, c.p.Hash, c.rec.Status, failedKinds(c.rec.Gates), want.Status, failedKinds(want.Gates))
			}
		}
	}
}

// The cache counts an array that several cached sets share once, while
// one of them holds it: views of one base fit where copies would not,
// and the count is always what the cached sets hold, through evictions.
func TestInputCacheCountsSharedOnce(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "f16", Batch: 2, Capacity: 512}
	base, err := oracle.Generate(s, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	arrays := inputsBytes(base) - base.OwnBytes()
	c := newInputCache(arrays + 64<<10)
	held := func(what string) {
		t.Helper()
		want, seen := int64(0), map[*float64]bool{}
		for _, e := range c.sets {
			want += e.bytes
			for _, a := range kvArrays(e.in) {
				if !seen[a.first] {
					seen[a.first] = true
					want += a.bytes
				}
			}
		}
		if c.used != want || c.used > c.limit {
			t.Errorf("%s: %d bytes counted, the cached sets hold %d (limit %d)", what, c.used, want, c.limit)
		}
	}
	for rows := 10; rows <= 60; rows += 10 {
		v := base.View(rows)
		if _, err := c.set(setKey{inputs: inputsKey{s, 1}, rows: rows}, func() (*oracle.Inputs, error) { return v, nil }); err != nil {
			t.Fatal(err)
		}
		held(fmt.Sprintf("view of %d rows", rows))
	}
	if len(c.sets) != 6 {
		t.Errorf("%d of 6 views of one base kept within one base's bytes", len(c.sets))
	}
	// A set of its own arrays as large as the base: every view goes, and
	// the base's arrays with them.
	if _, err := c.set(setKey{inputs: inputsKey{s, 2}, rows: 100}, func() (*oracle.Inputs, error) { return oracle.Generate(s, 100, 2) }); err != nil {
		t.Fatal(err)
	}
	held("after a set of its own arrays")
	if len(c.sets) != 1 || len(c.arrays) != 2 {
		t.Errorf("%d sets and %d arrays held, want the new set and its K and V", len(c.sets), len(c.arrays))
	}
}
