package probe

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// sevenB is the anchor shape of the H200 notes: 28 heads, 4 KV heads,
// head_dim 128, f16.
func sevenB(batch, capacity, splits int) results.Config {
	return results.Config{
		Shape:  abi.Shape{Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: batch, Capacity: capacity},
		NKV:    capacity,
		Splits: splits,
	}
}

func TestLayout(t *testing.T) {
	c := sevenB(1, 32768, 32)
	l, err := layoutOf(&c)
	if err != nil {
		t.Fatal(err)
	}
	// K: 32768 rows × 4 heads × 128 dims × 2 bytes = 32 MiB.
	if l.K != 32<<20 || l.V != 32<<20 {
		t.Errorf("K %d V %d, want 32 MiB each", l.K, l.V)
	}
	// partial: 32 splits × 28 heads × 132 floats × 4 bytes.
	if l.Partial != 32*28*132*4 {
		t.Errorf("partial %d, want %d", l.Partial, 32*28*132*4)
	}
	if l.Q != 28*128*4 || l.Out != 28*128*4 || l.Positions != 16 {
		t.Errorf("q %d out %d positions %d", l.Q, l.Out, l.Positions)
	}
	// f32 doubles K and V; SPLITS comes from Config.Splits alone (the plan
	// sets it from the define, once).
	c.Shape.KVDtype = "f32"
	c.Splits = 64
	if l, err = layoutOf(&c); err != nil || l.K != 64<<20 || l.splits != 64 {
		t.Errorf("f32, SPLITS 64: K %d splits %d err %v", l.K, l.splits, err)
	}
	c.Splits = 0
	if _, err := layoutOf(&c); err == nil {
		t.Error("no SPLITS: want an error")
	}
}

func TestFitError(t *testing.T) {
	// Batch 16 at 128K context: K and V are 2 GiB each.
	c := sevenB(16, 131072, 32)
	l, _ := layoutOf(&c)
	if l.K != 2<<30 {
		t.Fatalf("K %d, want 2 GiB", l.K)
	}
	flush := flushBytes(60 << 20)
	need := l.Total() + flush + headroom
	if err := fitError(l, flush, need); err != nil {
		t.Errorf("exactly enough memory refused: %v", err)
	}
	err := fitError(l, flush, need-1)
	if err == nil {
		t.Fatal("one byte short accepted")
	}
	for _, s := range []string{"K 2.00 GiB", "V 2.00 GiB", "flush 0.12 GiB", "is free"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
	if flushBytes(60<<20) != 120<<20 {
		t.Errorf("flush for a 60 MiB L2: %d", flushBytes(60<<20))
	}
}

func TestLengths(t *testing.T) {
	c := sevenB(3, 100, 8)
	c.NKV = 50
	if got := c.TimedLengths(); !reflect.DeepEqual(got, []int{50, 50, 50}) {
		t.Errorf("uniform: %v", got)
	}
	c.Lengths = []int{10, 20, 30}
	if got := c.TimedLengths(); !reflect.DeepEqual(got, []int{10, 20, 30}) {
		t.Errorf("ragged: %v", got)
	}
}

func TestKVBytes(t *testing.T) {
	// The H200 anchor: nkv 2048, 7B shape, f16 → 4 MiB (2 × 2048 × 4 × 128 × 2).
	c := sevenB(1, 2048, 32)
	if got := c.KVBytes(); got != 4<<20 {
		t.Errorf("KVBytes = %d, want %d", got, 4<<20)
	}
	c.Shape.Batch, c.Lengths = 2, []int{2048, 1024}
	if got := c.KVBytes(); got != 6<<20 {
		t.Errorf("ragged KVBytes = %d, want %d", got, 6<<20)
	}
}

func TestPositionBytes(t *testing.T) {
	b := positionBytes([]int{1, 300, 70000})
	for i, want := range []int32{0, 299, 69999} {
		if got := int32(binary.LittleEndian.Uint32(b[4*i:])); got != want {
			t.Errorf("position %d = %d, want %d", i, got, want)
		}
	}
}

func TestBWBufferBytes(t *testing.T) {
	// H200: 60 MiB L2 → 16 × L2 < 1 GiB, so 1 GiB.
	if n, err := bwBufferBytes(60<<20, 140<<30); err != nil || n != 1<<30 {
		t.Errorf("H200: %d, %v", n, err)
	}
	// A 128 MiB L2 → 2 GiB.
	if n, err := bwBufferBytes(128<<20, 140<<30); err != nil || n != 2<<30 {
		t.Errorf("big L2: %d, %v", n, err)
	}
	// Short of memory: half of what is free past the headroom.
	if n, err := bwBufferBytes(60<<20, 1<<30); err != nil || n != (1<<30-headroom)/2 {
		t.Errorf("short: %d, %v", n, err)
	}
	if _, err := bwBufferBytes(60<<20, 300<<20); err == nil {
		t.Error("too little memory to outgrow L2: want an error")
	}
}

// TestTableCoversAllocs: every allocation of the ABI's table is a buffer
// of the workspace's table under its name and at its size, so that a
// buffer argument always finds its device pointer.
func TestTableCoversAllocs(t *testing.T) {
	c := results.Config{Shape: abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 8, KVDtype: abi.FP8E4M3, Batch: 2, Capacity: 16}, Splits: 4}
	l, err := layoutOf(&c)
	if err != nil {
		t.Fatal(err)
	}
	w := &workspace{l: l}
	for a, al := range abi.Allocs {
		found := false
		for _, e := range w.table() {
			if e.name == al.Name {
				found = true
				if e.n != *l.size(abi.AllocID(a)) {
					t.Errorf("%s: %d bytes in the workspace, %d in the layout", al.Name, e.n, *l.size(abi.AllocID(a)))
				}
			}
		}
		if !found {
			t.Errorf("allocation %s has no buffer in the workspace", al.Name)
		}
	}
}
