package probe

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/sweep"
)

func TestCompileOptions(t *testing.T) {
	got := compileOptions("sm_90", []results.Define{{Name: "HEAD_DIM", Value: "128"}, {Name: "SPLITS", Value: "32"}}, []string{"-use_fast_math"})
	want := []string{"-arch=sm_90", "-lineinfo", "--std=c++17", "-DHEAD_DIM=128", "-DSPLITS=32", "-use_fast_math"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compileOptions = %q, want %q", got, want)
	}
}

func TestCacheKey(t *testing.T) {
	src := sweep.Source{Name: "d2.cu", Text: "kernel text", Headers: map[string]string{"abi.cuh": "abi", "combine.cuh": "comb"}}
	opts := []string{"-arch=sm_90", "-DSPLITS=32"}
	base := cacheKey(src, opts, "sm_90", "13.0")

	// Stable: the same inputs, including a header map built in another
	// order, give the same key.
	src2 := src
	src2.Headers = map[string]string{"combine.cuh": "comb", "abi.cuh": "abi"}
	if k := cacheKey(src2, append([]string(nil), opts...), "sm_90", "13.0"); k != base {
		t.Errorf("same inputs, different key: %s vs %s", k, base)
	}
	// Entry point names do not reach NVRTC, so they do not split the cache.
	src3 := src
	src3.Partial = "other"
	if cacheKey(src3, opts, "sm_90", "13.0") != base {
		t.Error("the entry point name changed the key")
	}

	changes := map[string]func() string{
		"source text": func() string { s := src; s.Text += " "; return cacheKey(s, opts, "sm_90", "13.0") },
		"source name": func() string { s := src; s.Name = "r4.cu"; return cacheKey(s, opts, "sm_90", "13.0") },
		"header text": func() string {
			s := src
			s.Headers = map[string]string{"abi.cuh": "abi2", "combine.cuh": "comb"}
			return cacheKey(s, opts, "sm_90", "13.0")
		},
		"header name": func() string {
			s := src
			s.Headers = map[string]string{"abi.h": "abi", "combine.cuh": "comb"}
			return cacheKey(s, opts, "sm_90", "13.0")
		},
		"header added": func() string {
			s := src
			s.Headers = map[string]string{"abi.cuh": "abi", "combine.cuh": "comb", "x.cuh": ""}
			return cacheKey(s, opts, "sm_90", "13.0")
		},
		"define value":  func() string { return cacheKey(src, []string{"-arch=sm_90", "-DSPLITS=64"}, "sm_90", "13.0") },
		"flag added":    func() string { return cacheKey(src, append(append([]string(nil), opts...), "-G"), "sm_90", "13.0") },
		"flag order":    func() string { return cacheKey(src, []string{"-DSPLITS=32", "-arch=sm_90"}, "sm_90", "13.0") },
		"arch":          func() string { return cacheKey(src, opts, "sm_100", "13.0") },
		"nvrtc version": func() string { return cacheKey(src, opts, "sm_90", "13.1") },
		// Length prefixes: moving bytes between fields must not collide.
		"field boundary": func() string {
			s := src
			s.Name, s.Text = "d2.cuk", "ernel text"
			return cacheKey(s, opts, "sm_90", "13.0")
		},
	}
	seen := map[string]string{base: "base"}
	for name, f := range changes {
		k := f()
		if prev, dup := seen[k]; dup {
			t.Errorf("changing the %s gives the key of %s", name, prev)
		}
		seen[k] = name
	}
}

func TestDiskCache(t *testing.T) {
	c := diskCache{dir: t.TempDir()}
	key := cacheKey(sweep.Source{Text: "x"}, nil, "sm_90", "13.0")
	if _, _, ok := c.get(key); ok {
		t.Fatal("empty cache hit")
	}
	if err := c.put(key, []byte{1, 2, 3}, "warning: x"); err != nil {
		t.Fatal(err)
	}
	cubin, log, ok := c.get(key)
	if !ok || !reflect.DeepEqual(cubin, []byte{1, 2, 3}) || log != "warning: x" {
		t.Errorf("get = %v, %q, %v", cubin, log, ok)
	}
	// A truncated (empty) entry is a miss, not a CUBIN to load.
	if err := os.WriteFile(c.path(key, ".cubin"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.get(key); ok {
		t.Error("empty CUBIN file was a hit")
	}
	// No temporary files are left behind.
	m, _ := filepath.Glob(filepath.Join(c.dir, key[:2], ".tmp-*"))
	if len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
	// A disabled cache never hits and never fails.
	var off diskCache
	if err := off.put(key, []byte{1}, ""); err != nil {
		t.Error(err)
	}
	if _, _, ok := off.get(key); ok {
		t.Error("disabled cache hit")
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	if d, _ := defaultCacheDir(); d != "/x/cache/ktune" {
		t.Errorf("with XDG_CACHE_HOME: %s", d)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := defaultCacheDir(); d != "/home/u/.cache/ktune" {
		t.Errorf("without XDG_CACHE_HOME: %s", d)
	}
}
