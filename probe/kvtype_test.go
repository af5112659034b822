package probe

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// fp8Point is fakePoint on fp8e4m3 K/V with per-head scales, its
// attn_partial taking the ABI's arguments with kv_scale last.
func fp8Point(variant string) *plan.Point {
	p := fakePoint(variant, 100)
	p.Config.Shape.KVDtype, p.Config.Shape.KVScale = "fp8e4m3", "head"
	p.Hash += "-fp8"
	p.GateKey += "-fp8"
	for _, name := range []string{"q", "k", "v", "positions", "partial", "heads", "kv_heads", "capacity", "scale", "kv_scale"} {
		a, err := abi.ParseArg(name)
		if err != nil {
			panic(err)
		}
		p.Launches[0].Args = append(p.Launches[0].Args, a)
	}
	return p
}

// TestFakeFP8: an fp8e4m3 point runs through the gates on the fake
// device: the kv_scale buffer is allocated, marshalled and uploaded with
// each set's own scales (a kernel reading them right passes every set,
// subnormal codes included), and a kernel that dequantizes V with K's
// scales fails the tolerance gate.
func TestFakeFP8(t *testing.T) {
	f := newFakeDevice()
	f.models["good"] = fakeModel{}
	f.models["kscale"] = fakeModel{kScaleForV: true}
	b := fakeBackend(t, f)
	if rec := run(t, b, fp8Point("good")); rec.Status != "ok" {
		t.Fatalf("good fp8 kernel: %s %s, failed %v", rec.Status, rec.Error, failedKinds(rec.Gates))
	}
	rec := run(t, b, fp8Point("kscale"))
	if got := failedKinds(rec.Gates); !strings.Contains(strings.Join(got, " "), "tolerance/uniform") {
		t.Errorf("V with K's scales: failed %v", got)
	}
}

// TestMarshalScales: kv_scale and k_scale point at the buffer, v_scale
// at its V half; a workspace without scales refuses them.
func TestMarshalScales(t *testing.T) {
	p := fp8Point("m")
	l, err := pointLayout(p)
	if err != nil {
		t.Fatal(err)
	}
	w := &workspace{l: l, kvScale: 0x10000}
	for name, want := range map[string]cuda.DevPtr{"kv_scale": 0x10000, "k_scale": 0x10000, "v_scale": 0x10000 + 4*2} {
		if got, err := bufferArg(name, l.dims(p.Config.Shape), w); err != nil || got != want {
			t.Errorf("%s: %#x, %v; want %#x", name, got, err, want)
		}
	}
	w.kvScale = 0
	for _, name := range []string{"kv_scale", "k_scale", "v_scale"} {
		if _, err := bufferArg(name, l.dims(p.Config.Shape), w); err == nil || !strings.Contains(err.Error(), "not allocated") {
			t.Errorf("%s without scales: %v", name, err)
		}
	}
}

// TestKVBytesTypes: the bytes a point moves follow the element size; an
// fp8e4m3 point moves half of f16's plus its scales.
func TestKVBytesTypes(t *testing.T) {
	c := results.Config{NKV: 100, Shape: abi.Shape{Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "f16", Batch: 1, Capacity: 100}}
	f16 := c.KVBytes()
	c.Shape.KVDtype = "bf16"
	if c.KVBytes() != f16 {
		t.Error("bf16 moves other bytes than f16")
	}
	c.Shape.KVDtype, c.Shape.KVScale = "fp8e4m3", "tensor"
	if got := c.KVBytes(); got != f16/2+2*2*4 {
		t.Errorf("fp8: %d bytes, f16 %d", got, f16)
	}
}

// TestScaledBaseNotShared: a scaled type's base is never a prefix of a
// longer one drawn for an earlier kernel (its scales come from every value
// drawn), so an fp8 kernel gated after one of longer gate lengths sees the
// bytes it sees alone, and its gates say what they say alone.
func TestScaledBaseNotShared(t *testing.T) {
	t.Parallel()
	f := newFakeDevice()
	shared := fakeBackend(t, f)
	longer := fp8Point("good")
	longer.Hash, longer.GateKey = longer.Hash+"-long", longer.GateKey+"-long"
	longer.GateNKV = append(slices.Clone(longer.GateNKV), 200)
	if rec := run(t, shared, longer); rec.Status != "ok" {
		t.Fatalf("longer fp8 kernel: %s, failed %v", rec.Status, failedKinds(rec.Gates))
	}
	later := fp8Point("good")
	rec := run(t, shared, later)
	want := run(t, fakeBackend(t, newFakeDevice()), fp8Point("good"))
	if !reflect.DeepEqual(rec.Gates, want.Gates) {
		t.Errorf("an fp8 kernel after one of longer gate lengths: gates %v, alone %v", rec.Gates, want.Gates)
	}
	if got := shared.base.in.Rows; got != baseRowsFor(100, later.Config.Shape) {
		t.Errorf("the later kernel's base has %d rows, want its own %d", got, baseRowsFor(100, later.Config.Shape))
	}
}
