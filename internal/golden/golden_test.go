package golden

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The expected diffs below were written out by hand from the inputs, in
// the unified format (GNU diff -u prints the same hunk headers for them),
// except for the pairing of replaced lines, which is this package's own.
func TestDiff(t *testing.T) {
	ten := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	twenty := func(edit map[int]string) string {
		var b strings.Builder
		for i := 1; i <= 20; i++ {
			if s, ok := edit[i]; ok {
				b.WriteString(s + "\n")
				continue
			}
			fmt.Fprintf(&b, "%d\n", i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name, want, got, diff string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"both empty", "", "", ""},
		{"one line replaced", "a\nb\nc\n", "a\nx\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n"},
		{"context is three lines", ten, strings.Replace(ten, "5\n", "five\n", 1),
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"distant changes make two hunks", twenty(nil), twenty(map[int]string{2: "two", 19: "nineteen"}),
			"@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n" +
				"@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20\n"},
		{"six lines apart make one hunk", twenty(nil), twenty(map[int]string{2: "two", 9: "nine"}),
			"@@ -1,12 +1,12 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+nine\n 10\n 11\n 12\n"},
		{"insertion at the start", "b\n", "a\nb\n", "@@ -1 +1,2 @@\n+a\n b\n"},
		{"removal at the end", "a\nb\n", "a\n", "@@ -1,2 +1 @@\n a\n-b\n"},
		{"golden file empty", "", "x\n", "@@ -0,0 +1 @@\n+x\n"},
		{"output empty", "x\ny\n", "", "@@ -1,2 +0,0 @@\n-x\n-y\n"},
		{"replaced lines are paired", "a\nb\nc\n", "x\ny\n", "@@ -1,3 +1,2 @@\n-a\n+x\n-b\n+y\n-c\n"},
		{"missing final newline", "a\n", "a", "@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"},
		{"carriage return is quoted", "x\r\n", "x\n", "@@ -1 +1 @@\n-\"x\\r\"\n+x\n"},
		{"tab is not quoted", "a\tb\n", "a\tc\n", "@@ -1 +1 @@\n-a\tb\n+a\tc\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Diff(c.want, c.got); got != c.diff {
				t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", c.want, c.got, got, c.diff)
			}
		})
	}
}

// A diff of two entirely different long files shows the first changed
// lines, both sides, and counts the rest.
func TestDiffTruncates(t *testing.T) {
	var want, got strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "a%d\n", i)
		fmt.Fprintf(&got, "b%d\n", i)
	}
	d := Diff(want.String(), got.String())
	ls := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	if ls[0] != "@@ -1,100 +1,100 @@" || ls[1] != "-a0" || ls[2] != "+b0" || ls[3] != "-a1" {
		t.Errorf("diff starts %q, want the hunk header then -a0 +b0 -a1", ls[:min(4, len(ls))])
	}
	if n := strings.Count(d, "\n-") + strings.Count(d, "\n+"); n != maxChanged {
		t.Errorf("%d changed lines shown, want %d", n, maxChanged)
	}
	if last, want := ls[len(ls)-1], fmt.Sprintf("… %d more changed lines not shown", 200-maxChanged); last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}

// lcsLen is the length of a longest common subsequence of x and y by the
// textbook recursion on prefixes, memoised: a second derivation to hold
// the table in edits against.
func lcsLen(x, y []string) int {
	memo := map[[2]int]int{}
	var f func(i, j int) int
	f = func(i, j int) int {
		if i == 0 || j == 0 {
			return 0
		}
		if v, ok := memo[[2]int{i, j}]; ok {
			return v
		}
		v := max(f(i-1, j), f(i, j-1))
		if x[i-1] == y[j-1] {
			v = f(i-1, j-1) + 1
		}
		memo[[2]int{i, j}] = v
		return v
	}
	return f(len(x), len(y))
}

// On random inputs the edit script rebuilds both sides, numbers its lines
// consistently and keeps as many lines as a longest common subsequence
// (or, past the table's bound, is still a correct if longer script).
func TestEditsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() []string {
		s := make([]string, r.IntN(12))
		for i := range s {
			s[i] = string(rune('a'+r.IntN(3))) + "\n"
		}
		return s
	}
	for iter := range 2000 {
		x, y := gen(), gen()
		for _, cells := range []int{maxCells, 0} {
			ops := edits(x, y, cells)
			var rx, ry []string
			kept := 0
			w, g := 1, 1
			for _, o := range ops {
				if o.wantLine != w || o.gotLine != g {
					t.Fatalf("#%d %q→%q: op %+v numbered (%d,%d), want (%d,%d)", iter, x, y, o, o.wantLine, o.gotLine, w, g)
				}
				if o.kind != '+' {
					rx = append(rx, o.text)
					w++
				}
				if o.kind != '-' {
					ry = append(ry, o.text)
					g++
				}
				if o.kind == ' ' {
					kept++
				}
			}
			if strings.Join(rx, "") != strings.Join(x, "") || strings.Join(ry, "") != strings.Join(y, "") {
				t.Fatalf("#%d %q→%q (cells %d): script rebuilds %q→%q", iter, x, y, cells, rx, ry)
			}
			if l := lcsLen(x, y); cells == maxCells && kept != l {
				t.Fatalf("#%d %q→%q: kept %d lines, longest common subsequence is %d", iter, x, y, kept, l)
			}
		}
	}
}

// fakeTB records what Check reports. Embedding testing.TB satisfies the
// interface's unexported method; calling a method not overridden here
// panics, which would flag Check using something unexpected.
type fakeTB struct {
	testing.TB
	errors, fatals []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var same fakeTB
	check(&same, path, []byte("a\nb\n"), false)
	if len(same.errors)+len(same.fatals) != 0 {
		t.Errorf("equal output reported: %q %q", same.errors, same.fatals)
	}

	var differ fakeTB
	check(&differ, path, []byte("a\nc\n"), false)
	if len(differ.errors) != 1 || len(differ.fatals) != 0 {
		t.Fatalf("different output: errors %q, fatals %q; want one error", differ.errors, differ.fatals)
	}
	for _, s := range []string{path, "-want +got", "-update", "\n-b\n+c\n"} {
		if !strings.Contains(differ.errors[0], s) {
			t.Errorf("mismatch message lacks %q:\n%s", s, differ.errors[0])
		}
	}

	var missing fakeTB
	check(&missing, filepath.Join(dir, "none.golden"), []byte("x"), false)
	if len(missing.fatals) != 1 || !strings.Contains(missing.fatals[0], "go test -update creates it") {
		t.Errorf("missing golden file: fatals %q, want one naming -update", missing.fatals)
	}

	// Under -update the file is written, its directory created, and the
	// same output then compares equal.
	var rewrite fakeTB
	nested := filepath.Join(dir, "sub", "new.golden")
	check(&rewrite, nested, []byte("fresh\n"), true)
	check(&rewrite, nested, []byte("fresh\n"), false)
	if len(rewrite.errors)+len(rewrite.fatals) != 0 {
		t.Errorf("rewrite then compare reported: %q %q", rewrite.errors, rewrite.fatals)
	}
	if b, err := os.ReadFile(nested); err != nil || string(b) != "fresh\n" {
		t.Errorf("rewritten file = %q, %v; want %q", b, err, "fresh\n")
	}

	// A rewrite that cannot write stops the test rather than passing.
	var blocked fakeTB
	check(&blocked, filepath.Join(path, "under-a-file.golden"), []byte("x"), true)
	if len(blocked.fatals) != 1 {
		t.Errorf("rewrite under a regular file: fatals %q, want one", blocked.fatals)
	}
}
