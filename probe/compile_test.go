package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/plan"
)

func TestCompileOptions(t *testing.T) {
	// The plan's flags come as they are, once: -lineinfo and --std=c++17
	// are the plan's (plan.compileFlags), not added again here.
	flags := []string{"-lineinfo", "--std=c++17", "-use_fast_math"}
	got := compileOptions("sm_90", []abi.Define{{Name: "HEAD_DIM", Value: "128"}, {Name: "SPLITS", Value: "32"}}, flags)
	want := []string{"-arch=sm_90", "-DHEAD_DIM=128", "-DSPLITS=32", "-lineinfo", "--std=c++17", "-use_fast_math"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compileOptions = %q, want %q", got, want)
	}
	// A variant that names its architecture (sm_90a) replaces the device's.
	got = compileOptions("sm_90", nil, []string{"-lineinfo", "-arch=sm_90a"})
	if want := []string{"-lineinfo", "-arch=sm_90a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("compileOptions with -arch = %q, want %q", got, want)
	}
}

func TestCacheKey(t *testing.T) {
	src := plan.Source{Name: "d2.cu", Text: "kernel text", Headers: map[string]string{"abi.cuh": "abi", "combine.cuh": "comb"}}
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
	key := cacheKey(plan.Source{Text: "x"}, nil, "sm_90", "13.0")
	if _, _, _, ok := c.get(key); ok {
		t.Fatal("empty cache hit")
	}
	if err := c.put(key, []byte{1, 2, 3}, "warning: x", nil); err != nil {
		t.Fatal(err)
	}
	cubin, log, _, ok := c.get(key)
	if !ok || !reflect.DeepEqual(cubin, []byte{1, 2, 3}) || log != "warning: x" {
		t.Errorf("get = %v, %q, %v", cubin, log, ok)
	}
	// A truncated (empty) entry is a miss, not a CUBIN to load.
	if err := os.WriteFile(c.path(key, ".cubin"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := c.get(key); ok {
		t.Error("empty CUBIN file was a hit")
	}
	// No temporary files are left behind.
	m, _ := filepath.Glob(filepath.Join(c.dir, key[:2], ".tmp-*"))
	if len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
	// A disabled cache never hits and never fails.
	var off diskCache
	if err := off.put(key, []byte{1}, "", nil); err != nil {
		t.Error(err)
	}
	if _, _, _, ok := off.get(key); ok {
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

// TestCachePutAtomic has readers look at an entry while a writer keeps
// replacing it with CUBINs of another size and content: a reader must see
// either no entry or one whole CUBIN, never a mix or a prefix.
func TestCachePutAtomic(t *testing.T) {
	t.Parallel()
	c := diskCache{dir: t.TempDir()}
	key := cacheKey(plan.Source{Text: "atomic"}, nil, "sm_90", "13.0")
	// Entry i is 64 KiB·(i%3+1) bytes, every byte equal to i: a torn write
	// shows as a wrong length or a byte that differs from the first.
	entry := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, (64<<10)*(i%3+1)) }
	const writes = 200
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var seen, bad atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				cubin, _, _, ok := c.get(key)
				if !ok {
					continue
				}
				seen.Add(1)
				if !bytes.Equal(cubin, entry(int(cubin[0]))) {
					bad.Add(1)
				}
			}
		})
	}
	for i := 1; i <= writes; i++ {
		if err := c.put(key, entry(i), fmt.Sprint("log ", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		t.Errorf("%d of %d reads saw a partial CUBIN", bad.Load(), seen.Load())
	}
	if seen.Load() == 0 {
		t.Error("no reader ever saw the entry")
	}
	if cubin, log, _, _ := c.get(key); !bytes.Equal(cubin, entry(writes)) || log != fmt.Sprint("log ", writes) {
		t.Errorf("final entry: %d bytes, log %q", len(cubin), log)
	}
	if m, _ := filepath.Glob(filepath.Join(c.dir, key[:2], ".tmp-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// fakeNVRTC is a compileFunc that counts its calls and makes a CUBIN from
// the options, rejecting sources that contain "bad".
type fakeNVRTC struct {
	calls   atomic.Int64
	running atomic.Int64
	peak    atomic.Int64
	delay   time.Duration
	gate    chan struct{} // non-nil: every compile waits for a receive from it
}

func (f *fakeNVRTC) compile(src, name string, _ map[string]string, opts, _ []string) ([]byte, string, map[string]string, error) {
	f.calls.Add(1)
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if f.gate != nil {
		<-f.gate
	}
	time.Sleep(f.delay)
	if strings.Contains(src, "bad") {
		return nil, name + "(1): error: bad", nil, &cuda.CompileError{Name: name, Log: name + "(1): error: bad"}
	}
	return []byte("cubin:" + strings.Join(opts, " ")), "", nil, nil
}

func noWarn(t *testing.T) func(string, ...any) {
	return func(f string, a ...any) { t.Errorf("unexpected warning: "+f, a...) }
}

func TestObtainCompilesOnceThenHits(t *testing.T) {
	c := diskCache{dir: t.TempDir()}
	var nv fakeNVRTC
	src := plan.Source{Name: "k.cu", Text: "k"}
	opts := []string{"-arch=sm_90"}
	key := cacheKey(src, opts, "sm_90", "13.0")
	f, err := c.obtain(context.Background(), key, src, opts, nv.compile, cacheWait{}, noWarn(t))
	if err != nil || f.origin != fromNVRTC || string(f.cubin) != "cubin:-arch=sm_90" {
		t.Fatalf("first obtain: %+v, %v", f, err)
	}
	f, err = c.obtain(context.Background(), key, src, opts, nv.compile, cacheWait{}, noWarn(t))
	if err != nil || f.origin != fromCache || f.compileSec != 0 || f.waitSec != 0 || string(f.cubin) != "cubin:-arch=sm_90" {
		t.Fatalf("second obtain: %+v, %v", f, err)
	}
	if n := nv.calls.Load(); n != 1 {
		t.Errorf("%d compiles, want 1", n)
	}
	if _, err := os.Stat(c.path(key, ".lock")); !os.IsNotExist(err) {
		t.Errorf("the claim was not released: %v", err)
	}
	// A rejected source is not cached and comes back with its log.
	bad := plan.Source{Name: "bad.cu", Text: "bad"}
	bkey := cacheKey(bad, opts, "sm_90", "13.0")
	f, err = c.obtain(context.Background(), bkey, bad, opts, nv.compile, cacheWait{}, noWarn(t))
	if err != nil || !f.rejected || f.cubin != nil || !strings.Contains(f.log, "error: bad") {
		t.Fatalf("rejected source: %+v, %v", f, err)
	}
	if _, _, _, ok := c.get(bkey); ok {
		t.Error("a rejected source was cached")
	}
}

// TestObtainWaitsForClaimant: a worker asking for a kernel another process
// is compiling waits for that CUBIN and never runs NVRTC itself.
func TestObtainWaitsForClaimant(t *testing.T) {
	c := diskCache{dir: t.TempDir()}
	src := plan.Source{Name: "k.cu", Text: "k"}
	opts := []string{"-arch=sm_90"}
	key := cacheKey(src, opts, "sm_90", "13.0")
	release, held, err := c.claim(key, time.Now, time.Hour)
	if err != nil || !held {
		t.Fatalf("claim: held %v, %v", held, err)
	}
	// A second claim, by anyone, is refused while this process lives.
	if _, again, err := c.claim(key, time.Now, time.Hour); err != nil || again {
		t.Fatalf("second claim: held %v, %v", again, err)
	}
	var nv fakeNVRTC
	type result struct {
		f   fetched
		err error
	}
	got := make(chan result, 1)
	go func() {
		f, err := c.obtain(context.Background(), key, src, opts, nv.compile, cacheWait{poll: time.Millisecond}, noWarn(t))
		got <- result{f, err}
	}()
	time.Sleep(30 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("obtain returned while the key was claimed: %+v", r)
	default:
	}
	if err := c.put(key, []byte("theirs"), "their log", nil); err != nil {
		t.Fatal(err)
	}
	release()
	r := <-got
	if r.err != nil || r.f.origin != fromOther || string(r.f.cubin) != "theirs" || r.f.log != "their log" || r.f.waitSec <= 0 {
		t.Errorf("obtain after the claimant finished: %+v, %v", r.f, r.err)
	}
	if nv.calls.Load() != 0 {
		t.Error("the waiter ran NVRTC")
	}
}

// TestObtainAfterFailedClaimant: when the claim goes away without a CUBIN
// (NVRTC rejected the source, or the claimant failed) the waiter compiles
// the key itself; a claim whose holder is dead is taken over.
func TestObtainAfterFailedClaimant(t *testing.T) {
	src := plan.Source{Name: "k.cu", Text: "k"}
	opts := []string{"-arch=sm_90"}
	key := cacheKey(src, opts, "sm_90", "13.0")

	t.Run("released without a CUBIN", func(t *testing.T) {
		c := diskCache{dir: t.TempDir()}
		release, _, _ := c.claim(key, time.Now, time.Hour)
		go func() { time.Sleep(20 * time.Millisecond); release() }()
		var nv fakeNVRTC
		f, err := c.obtain(context.Background(), key, src, opts, nv.compile, cacheWait{poll: time.Millisecond}, noWarn(t))
		if err != nil || f.origin != fromNVRTC || nv.calls.Load() != 1 || f.waitSec <= 0 {
			t.Errorf("%+v, %v, %d compiles", f, err, nv.calls.Load())
		}
	})
	stale := func(t *testing.T, c diskCache, content string, age time.Duration) {
		p := c.path(key, ".lock")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name, content string
		age           time.Duration
	}{
		// A pid above Linux's pid_max (2^22) never exists.
		{"holder's pid is gone", fmt.Sprintf("%s %d\n", host, 1<<30), 0},
		{"claim older than the bound", "elsewhere 1\n", 2 * staleClaim},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := diskCache{dir: t.TempDir()}
			stale(t, c, tc.content, tc.age)
			var nv fakeNVRTC
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			f, err := c.obtain(ctx, key, src, opts, nv.compile, cacheWait{poll: time.Millisecond}, noWarn(t))
			if err != nil || f.origin != fromNVRTC || nv.calls.Load() != 1 {
				t.Errorf("%+v, %v, %d compiles", f, err, nv.calls.Load())
			}
		})
	}
	t.Run("live holder on another host is waited for", func(t *testing.T) {
		c := diskCache{dir: t.TempDir()}
		stale(t, c, "elsewhere 1\n", 0)
		var nv fakeNVRTC
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := c.obtain(ctx, key, src, opts, nv.compile, cacheWait{poll: time.Millisecond}, noWarn(t))
		if !errors.Is(err, context.DeadlineExceeded) || nv.calls.Load() != 0 {
			t.Errorf("err %v, %d compiles; want a wait cut by the deadline and no compile", err, nv.calls.Load())
		}
	})
}
