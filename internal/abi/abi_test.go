package abi

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

var shape = Shape{Name: "s", Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: F16, Batch: 3, Capacity: 100}

// TestSizes checks the table's allocations against sizes derived by hand
// at one shape, with and without the buffers a signature may add.
func TestSizes(t *testing.T) {
	d := Dims{Shape: shape, Splits: 4, IO: ABIIO, WorkspaceBytes: 1000}
	got := Sizes(d, nil)
	want := [NumAllocs]int64{
		AllocQ:         3 * 8 * 64 * 4,
		AllocK:         3 * 100 * 2 * 64 * 2,
		AllocV:         3 * 100 * 2 * 64 * 2,
		AllocPositions: 32, // 3 positions + 3 seqlens, int32, aligned
		AllocPartial:   3 * 4 * 8 * 68 * 4,
		AllocOut:       3 * 8 * 64 * 4,
		AllocScratch:   32, // 3 × 2 counters, aligned
	}
	if got != want {
		t.Errorf("ABI sizes\n got %v\nwant %v", got, want)
	}
	d.IO = IO{Q: F16, Out: BF16, KVLayout: BHSD, Partial: PartialOpaque}
	d.Shape.KVDtype = FP8E4M3
	got = Sizes(d, func(b string) bool { return b == "lse" || b == "workspace" || b == "counters" })
	want[AllocQ], want[AllocOut] = 3*8*64*2, 3*8*64*2
	want[AllocK], want[AllocV] = 3*100*2*64, 3*100*2*64
	want[AllocLse], want[AllocWorkspace], want[AllocScratch], want[AllocKVScale] = 3*4*8*4, 1008, 3*8*4, 16
	if got != want {
		t.Errorf("declared sizes\n got %v\nwant %v", got, want)
	}
}

// TestBuffers checks each buffer's allocation and offset: seqlens after
// the positions, v_scale after k_scale.
func TestBuffers(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range Buffers {
		if seen[b.Name] || b.Alloc < 0 || b.Alloc >= NumAllocs || b.Doc == "" {
			t.Errorf("buffer %+v: repeated, outside the allocations or undocumented", b)
		}
		seen[b.Name] = true
	}
	for name, want := range map[string]int64{"q": 0, "seqlens": 12, "positions": 0, "v_scale": 8, "k_scale": 0} {
		if got := BufferNamed(name).At(Dims{Shape: shape}); got != want {
			t.Errorf("%s at %d, want %d", name, got, want)
		}
	}
	if BufferNamed("nope") != nil || ScalarNamed("nope") != nil {
		t.Error("a name outside the table was found")
	}
}

// TestScalars checks every scalar's value at one shape in both KV
// layouts, derived by hand.
func TestScalars(t *testing.T) {
	want := map[KVLayout]map[string]float64{
		BSHD: {"heads": 8, "kv_heads": 2, "head_dim": 64, "capacity": 100, "batch": 3, "group": 4, "splits": 4,
			"kv_row_stride": 128, "kv_head_stride": 64, "kv_batch_stride": 12800, "pstr": 68, "scale": 0.125,
			"kv_row_bytes": 256, "kv_head_bytes": 128, "kv_batch_bytes": 25600,
			"softcap": 0, "window_left": -1, "q_len": 1, "dv": 64, "mask_stride": 100,
			"kv_page_stride": 0, "kv_page_bytes": 0, "page_size": 0, "max_pages": 0, "num_pages": 0},
		BHSD: {"kv_row_stride": 64, "kv_head_stride": 6400, "kv_batch_stride": 12800, "kv_row_bytes": 128},
		// Pages of 16 rows, token-major: 7 per sequence (100 rows), one
		// spare per sequence.
		Paged: {"kv_row_stride": 128, "kv_head_stride": 64, "kv_page_stride": 2048, "kv_page_bytes": 4096,
			"page_size": 16, "max_pages": 7, "num_pages": 24},
	}
	for l, vals := range want {
		d := Dims{Shape: shape, Splits: 4, IO: IO{Q: F32, Out: F32, KVLayout: l, Partial: PartialABI}}
		if l == Paged {
			d.IO.Paging, d.PageSize = Paging{PageSize: "16", Order: PageNHD}, 16
		}
		for name, w := range vals {
			if got := ScalarNamed(name).Value(d); got != w {
				t.Errorf("%s %s = %v, want %v", l, name, got, w)
			}
		}
	}
	if len(want[BSHD]) != len(Scalars) {
		t.Errorf("%d scalars checked of %d", len(want[BSHD]), len(Scalars))
	}
	// A shape with options: their values, and what sizes them.
	opt := shape
	opt.Attention = Attention{Softcap: 30, ALiBi: ALiBiBuffer, Sinks: true, Window: 7, QLen: 4, MLA: MLA{DV: 32, Layout: MLASplit}}
	d := Dims{Shape: opt, Splits: 4, IO: ABIIO}
	for name, w := range map[string]float64{"softcap": 30, "window_left": 7, "q_len": 4, "dv": 32} {
		if got := ScalarNamed(name).Value(d); got != w {
			t.Errorf("options: %s = %v, want %v", name, got, w)
		}
	}
	sz := Sizes(d, func(b string) bool { return b == "lse" })
	for id, want := range map[AllocID]int64{AllocQ: 3 * 4 * 8 * 64 * 4, AllocOut: 3 * 4 * 8 * 32 * 4, AllocV: 3 * 100 * 2 * 32 * 2,
		AllocHeadParams: 2 * 8 * 4, AllocLse: 3 * 4 * 8 * 4} {
		if sz[id] != want {
			t.Errorf("options: %s is %d bytes, want %d", Allocs[id].Name, sz[id], want)
		}
	}
	if got := BufferNamed("sinks").At(Dims{Shape: opt}); got != 4*8 {
		t.Errorf("sinks at %d, want after the 8 slopes", got)
	}
	if got := (IO{KVLayout: BHSD}).Placement(shape, false, nil).Offset(1, 5, 1, 0); got != 12800+6400+5*64 {
		t.Errorf("bhsd offset %d", got)
	}
}

// TestArgText: every name of the table parses and prints as itself (its
// hash text), a typed override keeps its type, and constants and
// mistakes read as before.
func TestArgText(t *testing.T) {
	for _, name := range append(BufferNames(), ScalarNames()...) {
		a, err := ParseArg(name)
		if err != nil || a.String() != name {
			t.Errorf("%s: %v, %v", name, a, err)
		}
	}
	for _, tok := range []string{"capacity:i64", "i32:4", "f32:0.5", "u64:7"} {
		if a, err := ParseArg(tok); err != nil || a.String() != tok {
			t.Errorf("%s: %v, %v", tok, a, err)
		}
	}
	for tok, msg := range map[string]string{"q:i32": "takes no type", "scale:i32": "is a float", "i32:1.5": "not a valid",
		"nope": "not in the vocabulary", "heads:f64": "unknown type"} {
		if _, err := ParseArg(tok); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", tok, err, msg)
		}
	}
	if v, err := ScalarValue(Arg{Name: "capacity", Type: ArgI64}, Dims{Shape: shape}); err != nil || v != int64(100) {
		t.Errorf("capacity:i64 = %#v, %v", v, err)
	}
	if _, err := Typed(ArgI32, 1<<40); err == nil {
		t.Error("2^40 fits i32")
	}
}

// TestDtypes: a recorded shape with an unknown kv_dtype is refused, and
// an unknown dtype is never read as f32.
func TestDtypes(t *testing.T) {
	var s Shape
	if err := json.Unmarshal([]byte(`{"heads":1,"kv_dtype":"f17"}`), &s); err == nil {
		t.Error("kv_dtype f17 decoded")
	}
	if err := json.Unmarshal([]byte(`{"heads":1,"kv_dtype":"bf16"}`), &s); err != nil || s.KVType().Bytes != 2 {
		t.Errorf("bf16: %v %v", s, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown dtype did not panic")
		}
	}()
	Dtype("f17").Type()
}

// TestPartialStride ties PartialStride to the device side's PSTR.
func TestPartialStride(t *testing.T) {
	b, err := os.ReadFile("../../kernels/abi.cuh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "#define PSTR (HEAD_DIM + 4)") || PartialStride(128) != 132 {
		t.Error("PartialStride is not abi.cuh's PSTR (HEAD_DIM + 4)")
	}
}
