package spec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/internal/golden"
)

// testKernels stands in for the built-ins: two kernels shaped like the
// seed's R4 and D2, so that these tests do not change when the real
// built-ins do.
func testKernels(t testing.TB) catalog.Set {
	t.Helper()
	only128 := func(s abi.Shape, _ map[string]string) error {
		if s.HeadDim != 128 {
			return fmt.Errorf("head_dim %d: each of the 32 lanes owns 4 dimensions, so head_dim must be 128", s.HeadDim)
		}
		return nil
	}
	r4 := &catalog.Kernel{Name: "r4", File: "r4.cu", Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{{Name: "NR", Default: "4", Min: 1, Max: 8, Doc: "rows per register window"}},
		Grid:    [3]string{"SPLITS", "heads", "batch"}, Block: [3]string{"32", "1", "1"}, Shared: "0",
		Class: catalog.Tolerance, Check: only128}
	d2 := &catalog.Kernel{Name: "d2", File: "d2.cu", Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{{Name: "NR", Default: "4", Min: 1, Max: 4, Doc: "rows per staged K+V window"}},
		Grid:    [3]string{"SPLITS", "heads", "batch"}, Block: [3]string{"32", "1", "1"}, Shared: "0",
		Class: catalog.Bitwise, Twin: "r4", Check: only128}
	set, err := catalog.NewSet(r4, d2)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestErrors parses each testdata/errors/*.yaml, one mistake per file, and
// compares the message with its .golden file.
func TestErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/errors/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no error cases: %v", err)
	}
	kernels := testKernels(t)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			s, err := Load(f, kernels)
			if err == nil {
				t.Fatalf("accepted: %+v", s)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not a *spec.Error: %v", err, err)
			}
			if e.File != f {
				t.Errorf("error names file %q, want %q", e.File, f)
			}
			golden.Check(t, strings.TrimSuffix(f, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
}
