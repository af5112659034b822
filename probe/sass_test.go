package probe

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The listings internal/sass keeps of the seed kernels built for sm_90
// (cuobjdump -sass). Counted by hand in those files: d2's main loop issues
// its 4 K and 4 V loads (LDG.E.64) before the first SHFL.BFLY, d2 with
// NR=8 issues 16, and r4 only its 4 K loads, the V loads sitting inside the
// chain (the seeds' D2 lesson).
func TestAnalyzeSASSSeedListings(t *testing.T) {
	for _, c := range []struct {
		file string
		want int
	}{{"d2.sass", 8}, {"d2_nr8.sass", 16}, {"r4.sass", 4}} {
		text, err := os.ReadFile(filepath.Join("..", "internal", "sass", "testdata", c.file))
		if err != nil {
			t.Skipf("listing not available: %v", err)
		}
		rep, err := analyzeSASS(string(text), "attn_partial")
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if rep.loadsBeforeChain != c.want {
			t.Errorf("%s: %d loads before the chain, want %d", c.file, rep.loadsBeforeChain, c.want)
		}
		if _, err := analyzeSASS(string(text), "no_such_kernel"); err == nil {
			t.Errorf("%s: a missing entry point gave no error", c.file)
		}
	}
}

// TestInspect checks the wiring: with a disassembler the partial count
// and a .sass file next to the .cubin; without one, -1 and no file; a
// failing disassembler is logged, not fatal.
func TestInspect(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "internal", "sass", "testdata", "d2.sass"))
	if err != nil {
		t.Skipf("listing not available: %v", err)
	}
	key := "0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name   string
		disasm disassembler
		want   int
		file   bool
	}{
		{"found", func([]byte) (string, error) { return string(text), nil }, 8, true},
		{"none", nil, -1, false},
		{"fails", func([]byte) (string, error) { return "", errors.New("bad ELF") }, -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b := &Backend{opts: Options{SASSDir: dir}, log: testLog{t}, disasm: c.disasm}
			k := &kernelPair{build: &build{cubin: []byte{1}}}
			b.inspect(k, "d2/x", key, "attn_partial")
			if k.loadsBeforeChain != c.want {
				t.Errorf("loadsBeforeChain %d, want %d", k.loadsBeforeChain, c.want)
			}
			_, err := os.Stat(filepath.Join(dir, "d2_x-0123456789abcdef.sass"))
			if got := err == nil; got != c.file {
				t.Errorf(".sass file written: %v, want %v (%v)", got, c.file, err)
			}
		})
	}
}
