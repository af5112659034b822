package spec

import (
	"strings"
	"testing"
)

const budgetSpec = `name: b
landed: r4
shapes:
  - {name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
axes:
  nkv: [512]
  SPLITS: [32]
variants:
  - {name: r4, kernel: r4, BUDGET}
`

// The three budget keys decode into the variant's Budget; a bad value is
// a spec error at its position.
func TestBudgetKeys(t *testing.T) {
	s, err := Parse("b.yaml", []byte(strings.Replace(budgetSpec, "BUDGET", "max_registers: 128, no_spills: true, max_shared: 49152", 1)), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Variants[0].Budget; b != (Budget{MaxRegisters: 128, NoSpills: true, MaxShared: 49152}) {
		t.Errorf("budget %+v", b)
	}
	s, err = Parse("b.yaml", []byte(strings.Replace(budgetSpec, ", BUDGET", "", 1)), testKernels(t))
	if err != nil || !s.Variants[0].Budget.IsZero() {
		t.Errorf("no budget keys: %v, %+v", err, s)
	}
	for budget, want := range map[string]string{
		"max_registers: 0":   "b.yaml:9:43: variants[0].max_registers: want a positive integer, got 0",
		"max_registers: 300": "more than the 255 registers a thread can have",
		"no_spills: yes":     `variants[0].no_spills: want true or false, got "yes"`,
		"max_shared: 48KiB":  `variants[0].max_shared: want an integer, got "48KiB"`,
		"max_shared: -1":     "want a positive integer, got -1",
		"max_registrs: 64":   "max_registrs",
	} {
		_, err := Parse("b.yaml", []byte(strings.Replace(budgetSpec, "BUDGET", budget, 1)), testKernels(t))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", budget, err, want)
		}
	}
}

func TestBudgetBreaks(t *testing.T) {
	b := Budget{MaxRegisters: 64, NoSpills: true, MaxShared: 1024}
	if got := b.Breaks(64, 0, 512, 512); len(got) != 0 {
		t.Errorf("at the limits: %q", got)
	}
	got := strings.Join(b.Breaks(65, 8, 512, 513), "; ")
	for _, want := range []string{"65 registers, over max_registers 64", "8 bytes of local memory", "1025 bytes of shared memory (512 static + 513 dynamic), over max_shared 1024"} {
		if !strings.Contains(got, want) {
			t.Errorf("breaks %q, want %q", got, want)
		}
	}
	if got := (Budget{}).Breaks(255, 4096, 1<<20, 1<<20); len(got) != 0 {
		t.Errorf("no budget: %q", got)
	}
}
