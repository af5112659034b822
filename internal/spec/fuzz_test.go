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
		s, err := ParseWith("fuzz.yaml", data, kernels)
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
			for _, a := range s.DefineAxes(v) {
				splits = splits || a.Name == Splits
				if len(a.Values) == 0 {
					t.Fatalf("variant %s: empty axis %s", v.Name, a.Name)
				}
			}
			if !splits {
				t.Fatalf("variant %s has no SPLITS", v.Name)
			}
			if v.BitwiseWith != "" && (v.BitwiseWith == v.Name || s.Variant(v.BitwiseWith) == nil) {
				t.Fatalf("variant %s: bad bitwise_with %q accepted", v.Name, v.BitwiseWith)
			}
		}
	})
}
