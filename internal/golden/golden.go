// Package golden compares test output with golden files under testdata/
// and rewrites them when the test binary runs with -update, so that every
// printed table, report and error message in ktune is checked the same way
// and fails with the same readable line diff.
//
// Only test files import it: the -update flag it defines belongs to the
// test binary, and a flag can be defined once per binary, so no package
// may define its own -update next to this one.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the test binary's -update flag: `go test ./report -update`
// rewrites the package's golden files with the output its tests produce,
// instead of comparing with it. Review the rewrite with git diff before
// committing. A test binary that does not import this package has no
// -update flag and stops at it, so name the packages that hold golden
// files rather than ./... when other packages lack them.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// Check compares got with the golden file at path (relative to the test's
// package directory, usually testdata/…). Under -update it writes got to
// path instead, creating the directory if needed. A mismatch is reported
// with t.Errorf and a -want +got line diff, so the test goes on and shows
// every differing golden file at once; a missing file stops the test.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	check(t, path, got, *Update)
}

// check is Check with the flag's value passed in, so that the rewrite path
// is tested without setting the flag.
func check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("rewriting golden file %s: %v", path, err)
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("rewriting golden file %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (go test -update creates it)", err)
		return
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, Diff(string(want), string(got)))
	}
}
