package dispatch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/internal/golden"
)

// headerProbe is a C program that looks up (batch, nkv) pairs in the
// generated header and prints what it found.
const headerProbe = `#include <stdio.h>
#include "dispatch.h"

int main(void)
{
	static const int q[][2] = {{1, 1}, {1, 1023}, {1, 1024}, {1, 4095}, {1, 4096}, {1, 1 << 30},
	                           {16, 5}, {1, 0}, {2, 100}};
	unsigned i;
	for (i = 0; i < sizeof q / sizeof q[0]; i++) {
		const struct ktune_dispatch_shape *s = ktune_dispatch_find_shape(28, 4, 128, 1, 1, 0, q[i][0]);
		const struct ktune_dispatch_range *r = s ? ktune_dispatch_find(s, q[i][1]) : 0;
		if (!r) {
			printf("%d %d none\n", q[i][0], q[i][1]);
			continue;
		}
		printf("%d %d %s %s=%s %d grid=%d,%d,%d\n", q[i][0], q[i][1], r->variant,
		       r->defines[r->n_defines - 1].name, r->defines[r->n_defines - 1].value, r->splits,
		       r->grid[0], r->grid[1], r->grid[2]);
	}
	return 0;
}
`

// TestHeaderCompiles builds the fixture's header with the host C and C++
// compilers, pedantic and with warnings as errors, and checks its lookups
// against the ranges worked out by hand in TestExpectedRanges.
func TestHeaderCompiles(t *testing.T) {
	_, hdr, _ := render(t, buildFixture(t, Options{}))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dispatch.h"), hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"1 1 r4 SPLITS=32 32 grid=32,28,1",
		"1 1023 r4 SPLITS=32 32 grid=32,28,1",
		"1 1024 d2 SPLITS=32 32 grid=32,28,1",
		"1 4095 d2 SPLITS=32 32 grid=32,28,1",
		"1 4096 d2 SPLITS=64 64 grid=64,28,1",
		"1 1073741824 d2 SPLITS=64 64 grid=64,28,1",
		"16 5 d2 SPLITS=32 32 grid=32,28,16",
		"1 0 none",
		"2 100 none",
	}, "\n") + "\n"
	compilers := []struct{ name, src string }{
		{"cc", "probe.c"}, // C99
		{"c++", "probe.cc"},
	}
	ran := 0
	for _, c := range compilers {
		if _, err := exec.LookPath(c.name); err != nil {
			continue
		}
		src := filepath.Join(dir, c.src)
		if err := os.WriteFile(src, []byte(headerProbe), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, c.name+".out")
		std := "-std=c99"
		if c.name == "c++" {
			std = "-std=c++11"
		}
		out, err := exec.Command(c.name, std, "-pedantic", "-Wall", "-Wextra", "-Werror", "-o", bin, src).CombinedOutput()
		if err != nil {
			t.Errorf("%s: the header does not compile: %v\n%s", c.name, err, out)
			continue
		}
		got, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("running the %s probe: %v", c.name, err)
		}
		if string(got) != want {
			t.Errorf("%s lookups:\n%s", c.name, golden.Diff(want, string(got)))
		}
		ran++
	}
	if ran == 0 {
		t.Skip("no C or C++ compiler (cc, c++) on PATH")
	}
}

// TestYAMLRoundTrip reads the YAML back: it must be valid YAML whose
// ranges say what the table says (margins starting with "~" stay text).
func TestYAMLRoundTrip(t *testing.T) {
	tab := buildFixture(t, Options{})
	yml, _, _ := render(t, tab)
	var doc struct {
		Probe  string
		Shapes []struct {
			Batch  int
			Ranges []struct {
				MinNKV   int               `yaml:"min_nkv"`
				MaxNKV   int               `yaml:"max_nkv"`
				Variant  string            `yaml:"variant"`
				Defines  map[string]string `yaml:"defines"`
				Grid     [3]int            `yaml:"grid"`
				MedianNS float64           `yaml:"median_ns"`
				Margin   string            `yaml:"margin"`
			}
		}
	}
	if err := yaml.NewDecoder(bytes.NewReader(yml)).Decode(&doc); err != nil {
		t.Fatalf("the YAML does not parse: %v", err)
	}
	if doc.Probe != "cold" || len(doc.Shapes) != len(tab.Shapes) {
		t.Fatalf("probe %q, %d shapes; want cold, %d", doc.Probe, len(doc.Shapes), len(tab.Shapes))
	}
	for i, st := range tab.Shapes {
		ys := doc.Shapes[i]
		if ys.Batch != st.Shape.Batch || len(ys.Ranges) != len(st.Ranges) {
			t.Fatalf("shape %d: batch %d with %d ranges, want %d with %d", i, ys.Batch, len(ys.Ranges), st.Shape.Batch, len(st.Ranges))
		}
		for j, r := range st.Ranges {
			yr := ys.Ranges[j]
			if yr.MinNKV != r.MinNKV || yr.MaxNKV != r.MaxNKV || yr.Variant != r.Variant ||
				yr.Grid != r.Grid || yr.Margin != r.Margin || yr.MedianNS != roundNS(r.MedianNS) {
				t.Errorf("shape %d range %d: YAML %+v, table %+v", i, j, yr, r)
			}
			for _, d := range r.Defines {
				if yr.Defines[d.Name] != d.Value {
					t.Errorf("shape %d range %d: define %s = %q, want %q", i, j, d.Name, yr.Defines[d.Name], d.Value)
				}
			}
		}
	}
}

func roundNS(v float64) float64 {
	var f float64
	_ = yaml.Unmarshal([]byte(formatNS(v)), &f)
	return f
}
