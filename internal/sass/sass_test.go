package sass

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func parseFile(t *testing.T, name string) map[string]*Function {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := Parse(string(b))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return fs
}

// The expected numbers below were read off the listings in testdata by
// hand (see testdata/README.md): the backward BRA that closes the row
// loop, the first SHFL.BFLY inside it, and the LDG/LDGSTS/LDL/STL lines.
var seedSamples = []struct {
	file              string
	start, end, chain int // main loop [start, end] and first SHFL/MUFU in it
	before, total     int // LDG before the chain, LDG in the loop
	copies            int // LDGSTS before the chain
	ldl, stl          int // whole attn_partial
}{
	// R4: the window's 4 K loads are staged, the 4 V loads sit inline,
	// each after its row's butterfly.
	{file: "r4.sass", start: 0x7c0, end: 0x1b00, chain: 0xd90, before: 4, total: 8},
	// D2: K and V of the 4-row window, 8 loads, all before the first SHFL.BFLY.
	{file: "d2.sass", start: 0x780, end: 0x1af0, chain: 0xf80, before: 8, total: 8},
	// D2 with NR=8: 16 loads before the chain. (The seeds' "16 LDGs
	// clustered before the first SHFL.BFLY" were NR=4 with two 4-byte
	// half2 loads per row; abi.cuh loads a lane's 4 halves as one LDG.E.64.)
	{file: "d2_nr8.sass", start: 0x760, end: 0x2d50, chain: 0x16d0, before: 16, total: 16},
	// cp.async: no LDG in the loop at all; 4 rows x (K, V) LDGSTS.E.64
	// refilling the ring ahead of the chain.
	{file: "cpasync.sass", start: 0x11c0, end: 0x2ed0, chain: 0x2390, before: 0, total: 0, copies: 8},
	// rows: the local-memory accumulator (grep -c on the attn_partial part).
	{file: "rows.sass", start: 0x780, end: 0x7c00, chain: 0x3ad0, before: 192, total: 320, ldl: 133, stl: 136},
}

func TestSeedSamples(t *testing.T) {
	for _, s := range seedSamples {
		t.Run(s.file, func(t *testing.T) {
			fs := parseFile(t, s.file)
			var names []string
			for n := range fs {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) != 2 || names[0] != "attn_combine" || names[1] != "attn_partial" {
				t.Fatalf("functions = %v, want [attn_combine attn_partial]", names)
			}
			f := fs["attn_partial"]
			start, end, ok := MainLoop(f)
			if !ok || start != s.start || end != s.end {
				t.Errorf("MainLoop = [%#x, %#x] %v, want [%#x, %#x] true", start, end, ok, s.start, s.end)
			}
			r := AnalyzeChain(f)
			if r.Chain != s.chain {
				t.Errorf("chain starts at %#x, want %#x", r.Chain, s.chain)
			}
			if got := LoadsBeforeChain(f); got != s.before {
				t.Errorf("LoadsBeforeChain = %d, want %d", got, s.before)
			}
			if r.LDGTotal != s.total {
				t.Errorf("LDG in the loop = %d, want %d", r.LDGTotal, s.total)
			}
			if got := CopiesBeforeChain(f); got != s.copies {
				t.Errorf("CopiesBeforeChain = %d, want %d", got, s.copies)
			}
			ldl, stl := LocalTraffic(f)
			if ldl != s.ldl || stl != s.stl {
				t.Errorf("LocalTraffic = (%d, %d), want (%d, %d)", ldl, stl, s.ldl, s.stl)
			}
		})
	}
}

// TestSeedLessons states the two lessons as relations, independent of the
// exact counts: D2 stages every load of its window ahead of the chain and
// R4 does not; only the lane-owns-rows specimen touches local memory.
func TestSeedLessons(t *testing.T) {
	partial := func(name string) *Function { return parseFile(t, name)["attn_partial"] }
	d2, r4 := AnalyzeChain(partial("d2.sass")), AnalyzeChain(partial("r4.sass"))
	if d2.LDG == 0 || d2.LDG != d2.LDGTotal {
		t.Errorf("d2: %d of %d loop loads before the chain, want all of them", d2.LDG, d2.LDGTotal)
	}
	if r4.LDG >= r4.LDGTotal || r4.LDG >= d2.LDG {
		t.Errorf("r4: %d of %d loop loads before the chain, want fewer than all and fewer than d2's %d", r4.LDG, r4.LDGTotal, d2.LDG)
	}
	for _, name := range []string{"r4.sass", "d2.sass", "d2_nr8.sass", "cpasync.sass", "rows.sass"} {
		for _, f := range parseFile(t, name) {
			ldl, stl := LocalTraffic(f)
			wantLocal := name == "rows.sass" && f.Name == "attn_partial"
			if got := ldl > 0 && stl > 0; got != wantLocal {
				t.Errorf("%s %s: LocalTraffic = (%d, %d), want local traffic %v", name, f.Name, ldl, stl, wantLocal)
			}
		}
	}
}

// TestNvdisasmMatchesCuobjdump parses the same CUBIN's two listings: nvdisasm
// prints labels where cuobjdump prints offsets, so equal targets check the
// label resolution.
func TestNvdisasmMatchesCuobjdump(t *testing.T) {
	a, b := parseFile(t, "d2.sass"), parseFile(t, "d2.nvdisasm")
	if len(a) != len(b) {
		t.Fatalf("cuobjdump lists %d functions, nvdisasm %d", len(a), len(b))
	}
	for name, fa := range a {
		fb, ok := b[name]
		if !ok {
			t.Fatalf("nvdisasm listing lacks %s", name)
		}
		if len(fa.Instrs) != len(fb.Instrs) {
			t.Fatalf("%s: %d instructions vs %d", name, len(fa.Instrs), len(fb.Instrs))
		}
		branches := 0
		for i := range fa.Instrs {
			x, y := fa.Instrs[i], fb.Instrs[i]
			if x.Offset != y.Offset || x.Op != y.Op || x.Pred != y.Pred || x.Target != y.Target {
				t.Fatalf("%s instr %d: cuobjdump %+v, nvdisasm %+v", name, i, x, y)
			}
			if x.Target >= 0 {
				branches++
			}
		}
		if branches == 0 {
			t.Errorf("%s: no branch targets compared", name)
		}
	}
	if x, y := AnalyzeChain(a["attn_partial"]), AnalyzeChain(b["attn_partial"]); x != y {
		t.Errorf("AnalyzeChain differs: cuobjdump %+v, nvdisasm %+v", x, y)
	}
}
