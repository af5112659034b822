package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// TestFakeDeviceErrors: a device call that fails mid-point is an error of
// the point (not a fault: the error is not sticky) whose message says what
// was being done, and nothing stays blocked or captured.
func TestFakeDeviceErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		op   string
		n    int
		want string
	}{
		{"write", 1, "uploading q"},
		{"write", 2, "uploading K"},
		{"write", 4, "uploading V"},         // after K of both sequences
		{"write", 6, "uploading positions"}, // after q and K, V of two sequences
		{"fill32", 1, "clearing the L2 flush buffer"},
		{"fill32", 2, "poisoning partial"},
		{"fill32", 3, "poisoning out"},
		{"sync", 1, "running the kernels"},
		{"read", 1, "reading partial"},
		{"read", 2, "reading out"},
		{"launch", 1, "gate run at nkv 1 (uniform inputs)"},
		{"launch", 2, "repeated gate run"},
		{"reload", 1, "fake reload"},
		{"beginCapture", 1, "beginning graph capture"},
		{"endCapture", 1, "capturing 1 launch pairs"},
		{"launch", 3, "stale-rows gate at nkv 1"},
		{"launch", 57, "gate run at nkv 256 (uniform inputs tiled to the capacity)"}, // after 8 lengths × (5 sets + 1 repeat + 1 stale)
		{"launch", 59, "fresh-module gate at nkv 1"},
		{"launch", 60, "fresh-module gate at nkv 1, fresh module"},
		{"launch", 61, "capturing 1 launch pairs"},
		{"launch", 62, "fresh launch at nkv 7"},
		{"digest", 1, "digesting q"},
		{"clockSpin", 1, "fake clockSpin"},
		{"waitStop", 1, "running the timed launches"},
		{"elapsed", 1, "reading the events"},
		{"record start", 1, "recording the start event"},
		{"record stop", 1, "recording the stop event"},
	} {
		t.Run(fmt.Sprintf("%s#%d", c.op, c.n), func(t *testing.T) {
			f := newFakeDevice()
			b := fakeBackend(t, f)
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.failAt[c.op], f.calls = c.n, map[string]int{}
			rec, err := b.Run(context.Background(), fakePoint("k", 100))
			if err != nil || rec.Status != results.StatusError || !strings.Contains(rec.Error, c.want) {
				t.Fatalf("status %s, %v, error %q; want error with %q", rec.Status, err, rec.Error, c.want)
			}
			if f.blocked || f.capturing != nil || f.graphs != 0 {
				t.Errorf("left behind: blocked %v, capturing %v, %d graphs", f.blocked, f.capturing != nil, f.graphs)
			}
		})
	}
}

// TestBandwidthErrors: each failing step of the bandwidth measurement
// ends it with an error, and its buffer is freed.
func TestBandwidthErrors(t *testing.T) {
	for _, op := range []string{"fill32", "readPass", "record start", "record stop", "waitStop", "elapsed"} {
		for _, n := range []int{1, 2} {
			f := newFakeDevice()
			f.failAt[op] = n
			b := fakeBackend(t, f)
			if _, err := b.readBandwidth(context.Background()); err == nil && !(op == "fill32" && n == 2) {
				t.Errorf("%s #%d failing: no error", op, n)
			}
			if f.buffers != 0 {
				t.Errorf("%s #%d failing: %d buffers left", op, n, f.buffers)
			}
		}
	}
	f := newFakeDevice()
	f.allocErr = errOOM
	if _, err := fakeBackend(t, f).readBandwidth(context.Background()); !cuda.IsOutOfMemory(err) {
		t.Errorf("allocation: %v", err)
	}
	f = newFakeDevice()
	f.bw = math.Inf(1) // a pass takes no time
	if _, err := fakeBackend(t, f).readBandwidth(context.Background()); err == nil {
		t.Error("zero time: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fakeBackend(t, newFakeDevice()).readBandwidth(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestTimedReleasesBlocker: the blocker is released after the stop event
// is enqueued (the fake panics on a wait behind a held blocker) and on
// every error path.
func TestTimedReleasesBlocker(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	boom := errors.New("enqueue failed")
	if _, _, err := b.timed(func() error { return boom }); !errors.Is(err, boom) || f.blocked {
		t.Errorf("enqueue error: %v, blocked %v", err, f.blocked)
	}
	f.failAt["record stop"] = 2
	f.calls = map[string]int{}
	if _, _, err := b.timed(func() error { return nil }); err != nil || !f.stopped || f.blocked {
		t.Errorf("clean sample: %v, blocked %v", err, f.blocked)
	}
	if _, _, err := b.timed(func() error { return nil }); err == nil || f.blocked {
		t.Errorf("stop event failed: %v, blocked %v", err, f.blocked)
	}
	f.dead = errIllegal
	if _, _, err := b.timed(func() error { return nil }); !cuda.IsSticky(err) || f.blocked {
		t.Errorf("blocker refused: %v, blocked %v", err, f.blocked)
	}
}

// TestClose releases what the orchestration allocated: modules,
// workspace, flush buffer.
func TestFakeClose(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	run(t, b, fakePoint("k", 100))
	if len(f.kernels) == 0 || f.buffers == 0 {
		t.Fatalf("nothing loaded or allocated: %d kernels, %d buffers", len(f.kernels), f.buffers)
	}
	b.loaded["k"] = func() *kernelPair {
		for k := range f.kernels {
			return k
		}
		return nil
	}()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.kernels) != 0 || f.buffers != 0 || f.frees != 1 || b.ws != nil {
		t.Errorf("after Close: %d kernels, %d buffers, %d workspaces freed", len(f.kernels), f.buffers, f.frees)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type fakeInfo struct {
	attrs map[cuda.DeviceAttr]int
	err   error
}

func (i fakeInfo) Name() (string, error)    { return "NVIDIA H200", i.err }
func (i fakeInfo) UUID() (string, error)    { return "GPU-1234", nil }
func (i fakeInfo) TotalMem() (int64, error) { return 150 << 30, nil }
func (i fakeInfo) Attr(a cuda.DeviceAttr) (int, error) {
	v, ok := i.attrs[a]
	if !ok {
		return 0, fmt.Errorf("attribute %d", a)
	}
	return v, nil
}

type fakeVersion struct{ major, minor int }

func (v fakeVersion) Version() (int, int, error) { return v.major, v.minor, nil }

func TestDescribeEnv(t *testing.T) {
	info := fakeInfo{attrs: map[cuda.DeviceAttr]int{
		cuda.AttrMultiprocessorCount: 132, cuda.AttrL2CacheSize: 50 << 20, cuda.AttrClockRate: 1980000,
		cuda.AttrMemoryClockRate: 2619000, cuda.AttrComputeCapabilityMajor: 9, cuda.AttrComputeCapabilityMinor: 0,
		cuda.AttrMaxThreadsPerMultiprocessor: 2048,
	}}
	e, threads, err := describeEnv(info, fakeVersion{13, 0}, fakeVersion{12, 8}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if e.Arch != "sm_90" || e.SMs != 132 || e.L2Bytes != 50<<20 || e.ClockMHz != 1980 || e.MemClockMHz != 2619 ||
		e.Driver != "13.0" || e.NVRTC != "12.8" || e.DeviceIndex != 3 || e.Device != "NVIDIA H200" || e.MemBytes != 150<<30 || threads != 2048 {
		t.Errorf("env %+v, threads %d", e, threads)
	}
	delete(info.attrs, cuda.AttrL2CacheSize)
	if _, _, err := describeEnv(info, fakeVersion{13, 0}, fakeVersion{12, 8}, 0); err == nil {
		t.Error("a missing attribute was not an error")
	}
	info.err = errors.New("no name")
	if _, _, err := describeEnv(info, fakeVersion{13, 0}, fakeVersion{12, 8}, 0); err == nil {
		t.Error("a failing Name was not an error")
	}
}

func TestStartPrecompileRefuses(t *testing.T) {
	if _, err := StartPrecompile(nil, PrecompileOptions{}); err == nil || !strings.Contains(err.Error(), "no architecture") {
		t.Errorf("no arch: %v", err)
	}
	if _, err := StartPrecompile(nil, PrecompileOptions{Arch: "sm_90", CacheDir: "off"}); err == nil || !strings.Contains(err.Error(), "cache is off") {
		t.Errorf("cache off: %v", err)
	}
}
