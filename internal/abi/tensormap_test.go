package abi

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func kvMap() *TensorMap {
	return &TensorMap{Buffer: Arg{Name: "k", Type: ArgPtr}, Dtype: TMKV,
		Dims: []string{"head_dim", "kv_heads", "capacity * batch"}, Box: []string{"head_dim", "1", "64"}, Swizzle: 3}
}

// TestTensorMapEval: the dims, packed strides and box at a shape, the K/V
// type resolved, element strides 1 by default.
func TestTensorMapEval(t *testing.T) {
	s := Shape{Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: F16, Batch: 3, Capacity: 100}
	env := Dims{Shape: s, Splits: 4, IO: ABIIO}.Env(nil)
	v, err := kvMap().Eval(env, s.KVDtype)
	if err != nil {
		t.Fatal(err)
	}
	want := TensorMapValues{Dtype: TMF16, Dims: []uint64{64, 2, 300}, Strides: []uint64{128, 256}, Box: []uint32{64, 1, 64},
		ElementStrides: []uint32{1, 1, 1}, Swizzle: 3}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("values %+v, want %+v", v, want)
	}
	if _, err := kvMap().Eval(env, BF16); err != nil {
		t.Error(err)
	}
	if v, _ := kvMap().Eval(env, BF16); v.Dtype != TMBF16 {
		t.Errorf("kv as bf16: %s", v.Dtype)
	}
}

// TestTensorMapRules: each rule of the driver's that a value can break is
// refused with the entry named.
func TestTensorMapRules(t *testing.T) {
	s := Shape{Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: F16, Batch: 3, Capacity: 100}
	env := Dims{Shape: s, Splits: 4, IO: ABIIO}.Env(nil)
	for _, c := range []struct {
		name string
		edit func(m *TensorMap)
		want string
	}{
		{"box over 256", func(m *TensorMap) { m.Box[2] = "512" }, "box[2] = 512"},
		{"box zero", func(m *TensorMap) { m.Box[1] = "kv_heads - 2" }, "box[1] = 0"},
		{"rank 6", func(m *TensorMap) {
			m.Dims = slices.Repeat([]string{"2"}, 6)
			m.Box = slices.Repeat([]string{"8"}, 6)
		}, "rank 6"},
		{"rank 0", func(m *TensorMap) { m.Dims, m.Box = nil, nil }, "rank 0"},
		{"stride off 16", func(m *TensorMap) { m.Strides = []string{"head_dim * 2 + 8", "256"} }, "strides[0] = 136"},
		{"packed stride off 16", func(m *TensorMap) { m.Dims[0] = "36"; m.Box[0] = "8" }, "packed strides[0] = 72"},
		{"inner box off 16 bytes", func(m *TensorMap) { m.Box[0] = "4" }, "multiple of 16 bytes"},
		{"swizzle span", func(m *TensorMap) { m.Swizzle = 2 }, "swizzle 64b"},
		{"element stride 9", func(m *TensorMap) { m.ElementStrides = []string{"1", "9", "1"} }, "element_strides[1] = 9"},
		{"strides count", func(m *TensorMap) { m.Strides = []string{"128"} }, "strides has 1 entries"},
		{"oob nan of ints", func(m *TensorMap) { m.Dtype, m.OOBFill = TMU16, 1 }, "oob_fill nan"},
		{"unknown symbol", func(m *TensorMap) { m.Dims[2] = "pages" }, "pages"},
	} {
		m := kvMap()
		c.edit(m)
		_, err := m.Eval(env, F16)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestTensorMapTextCoversEveryField changes each field of a tensor map in
// turn and requires its text, the point's hash text, to change: a field
// that changes the encoding cannot be left out of the hash. Line and Col
// are where the spec wrote it.
func TestTensorMapTextCoversEveryField(t *testing.T) {
	base := kvMap()
	base.Strides, base.ElementStrides = []string{"128", "256"}, []string{"1", "1", "1"}
	t0 := base.String()
	typ := reflect.TypeOf(*base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Line" || f.Name == "Col" {
			continue
		}
		m := *base
		m.Dims, m.Strides, m.Box, m.ElementStrides = slices.Clone(base.Dims), slices.Clone(base.Strides), slices.Clone(base.Box), slices.Clone(base.ElementStrides)
		v := reflect.ValueOf(&m).Elem().Field(i)
		switch v.Kind() {
		case reflect.Uint32:
			v.SetUint(v.Uint() ^ 1)
		case reflect.Slice:
			v.Index(0).SetString("7")
		case reflect.Struct:
			m.Buffer = Arg{Name: "v", Type: ArgPtr}
		default:
			t.Fatalf("field %s of kind %s: extend the test", f.Name, v.Kind())
		}
		if m.String() == t0 {
			t.Errorf("changing %s leaves the text %q", f.Name, t0)
		}
	}
	a := Arg{Type: ArgTensorMap, TensorMap: base}
	if a.String() != t0 || a.IsExpr() || len(a.Leaves()) != 1 || a.Leaves()[0].Name != "k" {
		t.Errorf("as an argument: %q, leaves %v", a, a.Leaves())
	}
	slots, err := ParamSlots([]Arg{{Name: "out", Type: ArgPtr}, a, {Name: "heads", Type: ArgI32}})
	if want := []ParamSlot{{0, 8}, {48, 128}, {176, 4}}; err != nil || !slices.Equal(slots, want) {
		t.Errorf("slots %v (%v), want %v: a CUtensorMap is 128 bytes, its address in the constant bank 64-aligned", slots, err, want)
	}
}
