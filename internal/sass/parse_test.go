package sass

import (
	"errors"
	"strings"
	"testing"
)

// A hand-written cuobjdump-style listing: two functions, hex offsets with
// letters, predicated loads, a placeholder guarded by @!PT, the two-operand
// BRA form and the self-branch padding after EXIT.
const twoFuncs = `
	code for sm_90

		Function : looped
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDG.E.CONSTANT R0, desc[UR4][R2.64] ;      /* 0x0000000402007981 */
                                                                              /* 0x000562000c1e9900 */
        /*0010*/              @!P0 BRA 0xb0 ;                                 /* 0x0000000000000947 */
        /*00a0*/                   LDG.E.64.CONSTANT R4, desc[UR4][R4.64] ;
        /*00b0*/               @P0 LDG.E.64.CONSTANT R6, desc[UR4][R6.64] ;
        /*00c0*/              @!PT LDG.E.64 RZ, desc[UR4][RZ.64] ;
        /*00d0*/                   LDGSTS.E.64 [R5], desc[UR4][R6.64] ;
        /*00e0*/                   LDGDEPBAR ;
        /*00f0*/                   SHFL.BFLY PT, R3, R30, 0x10, 0x1f ;
        /*0100*/                   LDG.E.64.CONSTANT R8, desc[UR4][R8.64] ;
        /*0110*/                   MUFU.EX2 R3, R3 ;
        /*0120*/              @!P1 BRA !P2, 0xa0 ;
        /*0130*/                   BRA 0xa0 ;
        /*0140*/                   STL.128 [R1], R4 ;
        /*0150*/                   EXIT ;
        /*0160*/                   BRA 0x160;
        /*0170*/                   NOP;
		..........

		Function : straight
        /*0000*/                   LDL.LU R2, [R1+0x4] ;
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0020*/                   LDG.E R5, desc[UR4][R2.64+0x4] ;
        /*0030*/                   MUFU.RCP R6, R5 ;
        /*0040*/                   STL [R1], R6 ;
        /*0050*/                   EXIT ;
        /*0060*/                   BRA 0x60;

		Function : nochain
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0010*/                   EXIT ;
`

func TestParseListing(t *testing.T) {
	fs, err := Parse(twoFuncs)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 3 {
		t.Fatalf("got %d functions, want 3", len(fs))
	}
	f := fs["looped"]
	if f == nil || f.Name != "looped" || len(f.Instrs) != 16 {
		t.Fatalf("looped = %+v, want 16 instructions", f)
	}
	want := []Instr{
		{Offset: 0x10, Pred: "@!P0", Op: "BRA", Text: "@!P0 BRA 0xb0", Target: 0xb0},
		{Offset: 0xb0, Pred: "@P0", Op: "LDG.E.64.CONSTANT", Text: "@P0 LDG.E.64.CONSTANT R6, desc[UR4][R6.64]", Target: -1},
		{Offset: 0xc0, Pred: "@!PT", Op: "LDG.E.64", Text: "@!PT LDG.E.64 RZ, desc[UR4][RZ.64]", Target: -1},
		{Offset: 0xe0, Op: "LDGDEPBAR", Text: "LDGDEPBAR", Target: -1},
		{Offset: 0x120, Pred: "@!P1", Op: "BRA", Text: "@!P1 BRA !P2, 0xa0", Target: 0xa0},
		{Offset: 0x160, Op: "BRA", Text: "BRA 0x160", Target: 0x160},
		{Offset: 0x170, Op: "NOP", Text: "NOP", Target: -1},
	}
	byOff := map[int]Instr{}
	for _, in := range f.Instrs {
		byOff[in.Offset] = in
	}
	for _, w := range want {
		if got := byOff[w.Offset]; got != w {
			t.Errorf("instr at %#x = %+v, want %+v", w.Offset, got, w)
		}
	}
	if !byOff[0xc0].Never() || byOff[0xb0].Never() {
		t.Errorf("Never: @!PT must be never-executed, @P0 not")
	}
}

func TestChainEdgeCases(t *testing.T) {
	fs, err := Parse(twoFuncs)
	if err != nil {
		t.Fatal(err)
	}
	// looped: the first backward branch is the predicated one at 0x120
	// (0x130 also jumps back, 0x160 is the self-branch). Body [0xa0,
	// 0x120]: LDG at 0xa0 and the predicated one at 0xb0 come before the
	// SHFL; the @!PT one never executes; 0x100 comes after the chain.
	r := AnalyzeChain(fs["looped"])
	want := ChainReport{Loop: true, Start: 0xa0, End: 0x120, Chain: 0xf0, LDG: 2, LDGSTS: 1, LDGTotal: 3, LDGSTSTotal: 1}
	if r != want {
		t.Errorf("looped: %+v, want %+v", r, want)
	}
	if got := LoadsBeforeChain(fs["looped"]); got != 2 {
		t.Errorf("looped: LoadsBeforeChain = %d, want 2", got)
	}
	if ldl, stl := LocalTraffic(fs["looped"]); ldl != 0 || stl != 1 {
		t.Errorf("looped: LocalTraffic = (%d, %d), want (0, 1)", ldl, stl)
	}

	// straight: no loop (only the self-branch), so the whole function is
	// scanned; MUFU.RCP starts the chain after two loads.
	r = AnalyzeChain(fs["straight"])
	want = ChainReport{Loop: false, Start: 0, End: 0x60, Chain: 0x30, LDG: 2, LDGTotal: 2}
	if r != want {
		t.Errorf("straight: %+v, want %+v", r, want)
	}
	if ldl, stl := LocalTraffic(fs["straight"]); ldl != 1 || stl != 1 {
		t.Errorf("straight: LocalTraffic = (%d, %d), want (1, 1)", ldl, stl)
	}

	// nochain: no shuffle or exp anywhere: undetermined.
	if got := LoadsBeforeChain(fs["nochain"]); got != -1 {
		t.Errorf("nochain: LoadsBeforeChain = %d, want -1", got)
	}
	if got := CopiesBeforeChain(fs["nochain"]); got != -1 {
		t.Errorf("nochain: CopiesBeforeChain = %d, want -1", got)
	}
	if got := LoadsBeforeChain(nil); got != -1 {
		t.Errorf("nil: LoadsBeforeChain = %d, want -1", got)
	}
	if _, _, ok := MainLoop(nil); ok {
		t.Error("MainLoop(nil) found a loop")
	}
	if ldl, stl := LocalTraffic(nil); ldl != 0 || stl != 0 {
		t.Errorf("LocalTraffic(nil) = (%d, %d)", ldl, stl)
	}
}

// nvdisasm prints branch targets as labels and starts each function with
// a .section line; a label names the instruction after it.
func TestParseNvdisasmLabels(t *testing.T) {
	const listing = `
//--------------------- .text.k        --------------------------
	.section	.text.k,"ax",@progbits
k:
.text.k:
        /*0000*/                   MOV R0, RZ ;
.L_x_1:
        /*0010*/                   SHFL.BFLY PT, R3, R0, 0x1, 0x1f ;
        /*0020*/               @P0 BRA ` + "`(.L_x_1)" + ` ;
        /*0030*/                   BRA ` + "`(.L_x_2)" + `;
.L_x_2:
        /*0040*/                   EXIT ;
`
	fs, err := Parse(listing)
	if err != nil {
		t.Fatal(err)
	}
	f := fs["k"]
	if f == nil || len(f.Instrs) != 5 {
		t.Fatalf("k = %+v, want 5 instructions", f)
	}
	if f.Instrs[2].Target != 0x10 || f.Instrs[3].Target != 0x40 {
		t.Errorf("targets = %#x, %#x, want 0x10, 0x40", f.Instrs[2].Target, f.Instrs[3].Target)
	}
	if s, e, ok := MainLoop(f); !ok || s != 0x10 || e != 0x20 {
		t.Errorf("MainLoop = [%#x, %#x] %v, want [0x10, 0x20] true", s, e, ok)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line       int
		msg        string
	}{
		{"empty", "", 1, "no function found"},
		{"headers only", "\tcode for sm_90\n\t.target sm_90\n", 1, "no function found"},
		{"orphan instruction", "\n        /*0000*/   EXIT ;\n", 2, "before any function header"},
		{"duplicate", "Function : k\n /*0000*/ EXIT ;\nFunction : k\n /*0000*/ EXIT ;\n", 3, "listed twice"},
		{"bare predicate", "Function : k\n /*0000*/ @P0 ;\n", 2, "guards no instruction"},
		{"unknown label", "Function : k\n /*0000*/ BRA `(.L_x_9) ;\n /*0010*/ EXIT ;\n", 2, "label .L_x_9"},
		{"label at the end", "Function : k\n /*0000*/ BRA `(.L_end) ;\n.L_end:\n", 2, "label .L_end"},
		{"bad hex target", "Function : k\n /*0000*/ BRA 0xzz ;\n", 2, "branch target"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.text)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
				t.Errorf("err = %v, want line %d containing %q", err, c.line, c.msg)
			}
		})
	}
}
