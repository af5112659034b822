package abi

import (
	"strings"
	"testing"
)

// Env gives sms only to a point planned for an SM count (Dims.SMs): there
// a planned array's length, its entries and an argument's expression read
// it; without one, each fails naming sms instead of reading 0.
func TestEnvSMs(t *testing.T) {
	d := Dims{Shape: Shape{Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: F16, Batch: 2, Capacity: 4096}, Splits: 4, IO: ABIIO}
	tiles := Planned{Name: "tiles", Kind: PlanExpand, Count: "cdiv(nkv, cdiv(max_nkv, 8 * sms / kv_heads / batch))", Value: "j", Length: "8 * sms / kv_heads"}
	arg, err := ParseArg("u32:8 * sms / kv_heads")
	if err != nil {
		t.Fatal(err)
	}
	for _, sms := range []int{132, 114} {
		d.SMs = sms
		env := d.Env(nil)
		buf, err := tiles.Buf(env)
		if want := 8 * sms / 8; err != nil || buf.Entries != want {
			t.Errorf("sms %d: length %d, %v; want %d", sms, buf.Entries, err, want)
		}
		vals, err := tiles.Generate(env, []int{4096, 1})
		// The chunk is the longest sequence split over the work items one
		// sequence gets, cdiv(4096, 8·sms/8/2) rows: sequence 0's n items
		// hold j = 0..n-1, sequence 1's one item j = 0 follows.
		chunk := (4096 + sms/2 - 1) / (sms / 2)
		if n := (4096 + chunk - 1) / chunk; err != nil || len(vals) != 8*sms/8 || vals[n-1] != int64(n-1) || vals[n] != 0 {
			t.Errorf("sms %d: entries %v, %v; want sequence 0's %d work items, then sequence 1's", sms, vals, err, n)
		}
		v, err := ExprValue(arg, env)
		if err != nil || v != uint32(sms) {
			t.Errorf("sms %d: u32:8 * sms / kv_heads = %v, %v", sms, v, err)
		}
	}
	d.SMs = 0
	env := d.Env(nil)
	if _, ok := env[SymSMs]; ok {
		t.Errorf("Env without an SM count has sms = %d", env[SymSMs])
	}
	if _, err := tiles.Buf(env); err == nil || !strings.Contains(err.Error(), `"sms"`) {
		t.Errorf("a length that reads sms without an SM count: %v", err)
	}
	if _, err := tiles.Generate(env, []int{4096, 1}); err == nil || !strings.Contains(err.Error(), `"sms"`) {
		t.Errorf("entries that read sms without an SM count: %v", err)
	}
	if v, err := ExprValue(arg, env); err == nil || !strings.Contains(err.Error(), `"sms"`) {
		t.Errorf("an argument that reads sms without an SM count: %v, %v", v, err)
	}
}
