package spec

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, that every failure is
// an ErrorList of positioned *Error values naming the file, and that every
// accepted spec holds the invariants the planner relies on. The seed
// corpus under testdata/fuzz/FuzzParse holds the documented example and
// each error case.
func FuzzParse(f *testing.F) {
	kernels := testKernels(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data, kernels)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %T %q is not a non-empty ErrorList", err, err)
			}
			for _, e := range list {
				if e.File != "fuzz.yaml" || e.Line < 0 || e.Col < 0 || e.Msg == "" {
					t.Fatalf("malformed error %#v", e)
				}
				if strings.Contains(e.Msg, "\n") {
					t.Fatalf("multi-line message %q", e.Msg)
				}
			}
			return
		}
		if len(s.Shapes) == 0 || len(s.Variants) == 0 || len(s.Axes) == 0 || s.Axes[0].Name != NKV {
			t.Fatalf("accepted a spec without shapes, variants or nkv: %+v", s)
		}
		nkv := s.NKVs()
		if len(nkv) == 0 || nkv[0] < 1 {
			t.Fatalf("accepted context lengths %v", nkv)
		}
		for _, sh := range s.Shapes {
			if sh.Capacity < nkv[len(nkv)-1] || sh.Heads < 1 || sh.KVHeads < 1 || sh.Heads%sh.KVHeads != 0 || sh.HeadDim%4 != 0 {
				t.Fatalf("accepted shape %+v with nkv up to %d", sh, nkv[len(nkv)-1])
			}
		}
		for i := range s.Variants {
			v := &s.Variants[i]
			splits := false
			axes := s.DefineAxes(v)
			for _, a := range axes {
				splits = splits || a.Name == Splits
				if len(a.Values) == 0 {
					t.Fatalf("variant %s: empty axis %s", v.Name, a.Name)
				}
			}
			if len(v.Dispatch) > 0 {
				dispatchInvariants(t, s, v, axes)
			} else if !splits {
				t.Fatalf("variant %s has no SPLITS", v.Name)
			}
			if v.BitwiseWith != "" && (v.BitwiseWith == v.Name || s.Variant(v.BitwiseWith) == nil || len(s.Variant(v.BitwiseWith).Dispatch) > 0) {
				t.Fatalf("variant %s: bad bitwise_with %q accepted", v.Name, v.BitwiseWith)
			}
		}
	})
}

// dispatchInvariants checks an accepted dispatch variant: thresholds
// strictly increase to a single catch-all, every nkv has an arm, and
// every arm has SPLITS at the first combination of the axes.
func dispatchInvariants(t *testing.T, s *Spec, v *Variant, axes []Axis) {
	t.Helper()
	if v.Kernel != "" || v.BitwiseWith != "" || len(v.Grid)+len(v.Block) > 0 || v.Shared != "" {
		t.Fatalf("dispatch variant %s accepted with kernel, bitwise_with or geometry: %+v", v.Name, v)
	}
	last := len(v.Dispatch) - 1
	for j, a := range v.Dispatch {
		if (j == last) != (a.Below == 0) || (j > 0 && j < last && a.Below <= v.Dispatch[j-1].Below) {
			t.Fatalf("variant %s: arms %+v accepted", v.Name, v.Dispatch)
		}
	}
	for _, n := range s.NKVs() {
		if v.Arm(n) == nil {
			t.Fatalf("variant %s: no arm for nkv %d", v.Name, n)
		}
	}
	vals := make([]string, len(axes))
	for i, ax := range axes {
		vals[i] = ax.Values[0]
	}
	for j := range v.Dispatch {
		if _, ok := s.Shapes[0].ArmDefines(&v.Dispatch[j], axes, vals)[Splits]; !ok {
			t.Fatalf("variant %s: arm %d has no SPLITS", v.Name, j)
		}
	}
}
