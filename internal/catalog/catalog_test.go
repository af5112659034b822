package catalog

import (
	"errors"
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

func TestCheckValue(t *testing.T) {
	d := DefineSpec{Name: "NR", Min: 1, Max: 8}
	for _, c := range []struct {
		value, err string
	}{
		{"1", ""}, {"8", ""},
		{"0", "NR=0 is below the minimum 1"},
		{"9", "NR=9 is above the maximum 8"},
		{"four", "NR=four is not an integer"},
	} {
		err := d.CheckValue(c.value)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("CheckValue(%s) = %v, want %q", c.value, err, c.err)
		}
	}
	if err := (DefineSpec{Name: "MODE"}).CheckValue("fast"); err != nil {
		t.Errorf("an unbounded define refused a string: %v", err)
	}
}

func TestAccepts(t *testing.T) {
	refused := errors.New("head_dim 64 unsupported")
	calls := 0
	k := &Kernel{Name: "k", Defines: []DefineSpec{{Name: "NR", Min: 1, Max: 4}},
		Check: func(s abi.Shape, _ map[string]string) error {
			calls++
			if s.HeadDim != 128 {
				return refused
			}
			return nil
		}}
	if err := k.Accepts(abi.Shape{HeadDim: 128}, map[string]string{"NR": "4"}); err != nil {
		t.Errorf("refused a valid combination: %v", err)
	}
	err := k.Accepts(abi.Shape{HeadDim: 128}, map[string]string{"NR": "8"})
	if err == nil || err.Error() != "k: NR=8 is above the maximum 4" {
		t.Errorf("bound: %v", err)
	}
	if calls != 1 {
		t.Errorf("Check ran %d times; a value out of bounds must not reach it", calls)
	}
	if err := k.Accepts(abi.Shape{HeadDim: 64}, map[string]string{"NR": "4"}); !errors.Is(err, refused) {
		t.Errorf("Check's reason lost: %v", err)
	}
}

func TestSet(t *testing.T) {
	a, b := &Kernel{Name: "a"}, &Kernel{Name: "b"}
	s, err := NewSet(b, a)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Names() = %v", got)
	}
	if k, ok := s.Lookup("a"); !ok || k != a {
		t.Errorf("Lookup(a) = %v, %v", k, ok)
	}
	if _, err := NewSet(a, &Kernel{Name: "a"}); err == nil {
		t.Error("NewSet accepted a duplicate name")
	}
}
