package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// The test binary doubles as the worker (and, for the parent-kill test, as
// the sweeping parent): TestMain looks at the environment before running
// any test.
const (
	envFakeWorker = "KTUNE_TEST_FAKE_WORKER" // serve as a worker
	envFakeDevice = "KTUNE_TEST_FAKE_DEVICE" // the worker's device ordinal
	envFakeBW     = "KTUNE_TEST_FAKE_BW"     // read bandwidth per device, comma-separated
	envFakeArch   = "KTUNE_TEST_FAKE_ARCH"   // architecture per device, comma-separated
	envFakeDelay  = "KTUNE_TEST_FAKE_DELAY"  // time each good point takes
	envFakeSweep  = "KTUNE_TEST_FAKE_SWEEP"  // sweep testPlan(fakeSweepPoints) into this directory
	envFakeGates  = "KTUNE_TEST_FAKE_GATES"  // every record's gate_sec, split evenly into its gate_cost
	// envFakeStartFail is a directory of tokens (takeToken): a worker
	// that takes one fails its start for want of device memory.
	envFakeStartFail = "KTUNE_TEST_FAKE_START_FAIL"
	// envFakeFault is a directory of tokens: a worker's point that takes
	// one faults as the "fault" variant does, whatever its variant (on
	// the H200, good kernels that faulted with the device crowded).
	envFakeFault = "KTUNE_TEST_FAKE_FAULT"
	// envFakeLinger is how long a worker takes to exit once told to stop.
	envFakeLinger = "KTUNE_TEST_FAKE_LINGER"
)

const fakeSweepPoints = 12

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == "--tool":
		os.Exit(fakeSanitizerMain())
	case os.Getenv(envFakeWorker) != "":
		os.Exit(fakeWorkerMain())
	case os.Getenv(envFakeSweep) != "":
		os.Exit(fakeSweepMain(os.Getenv(envFakeSweep)))
	}
	os.Exit(m.Run())
}

// fakeWorkerMain is a worker whose backend serves the records of
// recordsFor(testPlan(16)) by hash and misbehaves on demand, by the
// point's variant name.
func fakeWorkerMain() int {
	dev, _ := strconv.Atoi(os.Getenv(envFakeDevice))
	err := Serve(context.Background(), func() (plan.Backend, error) {
		if takeToken(os.Getenv(envFakeStartFail)) {
			return nil, errors.New("making a context on device 0: cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory (fake)")
		}
		return newFakeBackend(dev), nil
	}, os.Stdin, os.Stdout, ServeOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake worker:", err)
		return 1
	}
	if d, perr := time.ParseDuration(os.Getenv(envFakeLinger)); perr == nil {
		time.Sleep(d)
	}
	return 0
}

type fakeBackend struct {
	env    results.Env
	replay *replay.Backend
	delay  time.Duration
}

func pick(list string, i int, def string) string {
	parts := strings.Split(list, ",")
	if list == "" || i >= len(parts) {
		return def
	}
	return parts[i]
}

func newFakeBackend(dev int) *fakeBackend {
	bw, _ := strconv.ParseFloat(pick(os.Getenv(envFakeBW), dev, "4560"), 64)
	delay, _ := time.ParseDuration(os.Getenv(envFakeDelay))
	env := results.Env{Device: "Fake H200", DeviceIndex: dev, UUID: fmt.Sprintf("GPU-fake-%d", dev),
		Arch: pick(os.Getenv(envFakeArch), dev, "sm_90"), SMs: 132, ClockMHz: 1980, MemClockMHz: 2619,
		ReadBWGBps: bw, Host: fmt.Sprintf("pid %d", os.Getpid())}
	recs := recordsFor(testPlan(16))
	for i := range recs {
		recs[i].Env = env
	}
	return &fakeBackend{env: env, replay: replay.New(recs), delay: delay}
}

func (f *fakeBackend) Env(ctx context.Context) (results.Env, error) { return f.env, nil }
func (f *fakeBackend) Close() error                                 { return nil }

func (f *fakeBackend) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	variant := p.Config.Variant
	if takeToken(os.Getenv(envFakeFault)) {
		variant = "fault"
	}
	switch variant {
	case "fault": // a sticky CUDA error: the backend says so and gives up
		rec := results.Record{Hash: p.Hash, Config: p.Config, Env: f.env, Status: results.StatusFault,
			Error: "launching attn_partial: CUDA_ERROR_ILLEGAL_ADDRESS (fake)"}
		return rec, errors.New("the CUDA context is lost (fake)")
	case "crash": // the process dies mid-point
		fmt.Fprintln(os.Stderr, "fake: the driver crashed")
		os.Exit(2)
	case "hang": // a kernel that never returns
		fmt.Fprintln(os.Stderr, "fake: launched a kernel that spins")
		time.Sleep(time.Hour)
	case "oomkill": // the kernel's OOM killer
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case "oom": // an allocation refused: the point's failure, the worker lives
		return results.Record{Hash: p.Hash, Config: p.Config, Env: f.env, Status: results.StatusOOM,
			Error: "allocating 3.00 GiB of buffers: CUDA_ERROR_OUT_OF_MEMORY (fake)"}, nil
	case "nan": // a backend bug: a NaN JSON cannot carry
		rec := results.Record{Hash: p.Hash, Config: p.Config, Env: f.env, Status: results.StatusOK,
			Probes: []results.Measurement{{Probe: results.ProbeCold, GBps: math.NaN()}}}
		return rec, nil
	case "badaccess": // what a sanitizer would see: the fake sanitizer reads the mark
		if mark := os.Getenv(envFakeSanMark); mark != "" {
			os.WriteFile(mark, []byte(p.Hash), 0o644)
		}
	case "noisy": // a native library printing on stdout
		fmt.Println("NVRTC says hello on stdout")
	case "lastwords": // answers, then exits while idle
		rec, err := f.replay.Run(ctx, p)
		go func() {
			time.Sleep(50 * time.Millisecond)
			os.Exit(0)
		}()
		return rec, err
	}
	time.Sleep(f.delay)
	rec, err := f.replay.Run(ctx, p)
	if s, perr := strconv.ParseFloat(os.Getenv(envFakeGates), 64); perr == nil {
		rec.GateSec = s
		rec.GateCost = &results.GateCost{Inputs: s / 5, Oracle: s / 5, Upload: s / 5, Device: s / 5, Host: s / 5}
	}
	return rec, err
}

// takeToken takes one of the tokens in dir, files named token-N, by
// removing it: true when this process got one. Removal is atomic, so of
// processes racing for the tokens each wins at most one and no token
// serves twice. An empty dir has none.
func takeToken(dir string) bool {
	if dir == "" {
		return false
	}
	names, _ := filepath.Glob(filepath.Join(dir, "token-*"))
	for _, n := range names {
		if os.Remove(n) == nil {
			return true
		}
	}
	return false
}

// makeTokens puts n tokens in a new directory for takeToken.
func makeTokens(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("token-%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeCommand returns a pool's command factory running this test binary as
// a fake worker with the extra environment.
func fakeCommand(extra ...string) func(int) *exec.Cmd {
	return func(dev int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envFakeWorker+"=1", fmt.Sprintf("%s=%d", envFakeDevice, dev))
		cmd.Env = append(cmd.Env, extra...)
		return cmd
	}
}

func newTestPool(t *testing.T, opts PoolOptions) *Pool {
	t.Helper()
	if opts.Command == nil {
		opts.Command = fakeCommand()
	}
	if opts.Grace == 0 {
		opts.Grace = 100 * time.Millisecond
	}
	p, err := NewPool(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// workerPid is the pid of the fake worker that produced rec.
func workerPid(rec results.Record) string { return rec.Env.Host }

func TestPoolIsolatesFaults(t *testing.T) {
	pl := testPlan(12)
	want := map[string]results.Record{}
	for _, r := range recordsFor(testPlan(16)) {
		want[r.Hash] = r
	}
	// Bad points among good ones; a good point follows each, so that it
	// shows the fresh worker.
	bad := map[int]struct {
		variant string
		status  results.Status
		text    string // in the record's error
	}{
		1:  {"fault", results.StatusFault, "CUDA_ERROR_ILLEGAL_ADDRESS (fake)"},
		3:  {"crash", results.StatusFault, "fake: the driver crashed"},
		5:  {"hang", results.StatusTimeout, "fake: launched a kernel that spins"},
		7:  {"oomkill", results.StatusOOM, "OOM killer"},
		9:  {"oom", results.StatusOOM, "CUDA_ERROR_OUT_OF_MEMORY (fake)"},
		10: {"nan", results.StatusError, "could not be encoded"},
		11: {"noisy", results.StatusOK, ""},
	}
	restarts := 0
	for i, b := range bad {
		pl.Points[i].Config.Variant = b.variant
		pl.Points[i].Measure.TimeoutSec = 0.5
		if b.status == results.StatusFault || b.status == results.StatusTimeout || b.variant == "oomkill" {
			restarts++
		}
	}
	var log strings.Builder
	pool := newTestPool(t, PoolOptions{Log: &log})
	e := newRunEnv(t)
	sum, err := Run(context.Background(), pool, pl, e.opts())
	if err != nil {
		t.Fatalf("the sweep stopped: %v", err)
	}
	same(t, "file", fileHashes(t, e.dir), planHashes(pl, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11))
	if sum.Ran != 12 {
		t.Errorf("ran %d points, want 12", sum.Ran)
	}
	for i, r := range sum.Records {
		if b, ok := bad[i]; ok {
			if r.Status != b.status || !strings.Contains(r.Error, b.text) {
				t.Errorf("point %d (%s): status %s, error %q; want %s with %q", i, b.variant, r.Status, r.Error, b.status, b.text)
			}
			if r.Env.DeviceIndex != 0 || r.Env.UUID != "GPU-fake-0" {
				t.Errorf("point %d (%s): env %+v does not name the device", i, b.variant, r.Env)
			}
			continue
		}
		w := want[r.Hash]
		if r.Status != w.Status || len(r.Probes) != len(w.Probes) {
			t.Errorf("point %d: status %s with %d probes, want %s with %d", i, r.Status, len(r.Probes), w.Status, len(w.Probes))
		}
		if b, ok := bad[i-1]; ok && (b.status == results.StatusFault || b.status == results.StatusTimeout || b.variant == "oomkill") {
			if workerPid(r) == workerPid(sum.Records[i-2]) || workerPid(r) == "" {
				t.Errorf("point %d after %s ran in worker %q, the same as before it", i, b.variant, workerPid(r))
			}
		}
	}
	if got := pool.Starts(); got != 1+restarts {
		t.Errorf("%d workers started, want %d (one, then one after each of %d bad points)", got, 1+restarts, restarts)
	}
	if !strings.Contains(log.String(), "NVRTC says hello on stdout") {
		t.Errorf("a stray stdout line was not logged:\n%s", log.String())
	}
}

func TestPoolWorkerExitWhileIdleIsNotTheNextPointsFault(t *testing.T) {
	pl := testPlan(3)
	pl.Points[0].Config.Variant = "lastwords"
	pool := newTestPool(t, PoolOptions{})
	ctx := context.Background()
	if _, err := pool.Env(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := pool.Run(ctx, pl.Points[0])
	if err != nil || first.Status != results.StatusOK {
		t.Fatalf("first point: %s %q, %v", first.Status, first.Error, err)
	}
	select { // the worker exits meanwhile
	case <-pool.slots[0].w.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not exit")
	}
	second, err := pool.Run(ctx, pl.Points[1])
	if err != nil || second.Status != results.StatusOK {
		t.Fatalf("second point, after the worker exited: %s %q, %v", second.Status, second.Error, err)
	}
	if workerPid(first) == workerPid(second) {
		t.Errorf("both points ran in %s", workerPid(first))
	}
}

func TestPoolCancelKillsTheWorker(t *testing.T) {
	pl := testPlan(1)
	pl.Points[0].Config.Variant = "hang"
	pool := newTestPool(t, PoolOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := pool.Env(ctx); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := pool.Run(ctx, pl.Points[0])
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %v to notice the cancel", d)
	}
}

// TestPoolStopWait: a worker slow to exit gets the pool's stop wait, is
// killed after it and named in the error; a cancelled Stop kills it at
// once rather than wait out a stop wait of minutes.
func TestPoolStopWait(t *testing.T) {
	pl := testPlan(1)
	stop := func(ctx context.Context, wait time.Duration) (time.Duration, error) {
		t.Helper()
		pool := newTestPool(t, PoolOptions{StopWait: wait, Command: fakeCommand(envFakeLinger + "=2s")})
		if rec, err := pool.Run(context.Background(), pl.Points[0]); err != nil || rec.Status != results.StatusOK {
			t.Fatalf("Run: %s %v", rec.Status, err)
		}
		start := time.Now()
		err := pool.Stop(ctx)
		return time.Since(start), err
	}
	if d, err := stop(context.Background(), 10*time.Second); err != nil || d < time.Second {
		t.Errorf("given 10 s, a worker that takes 2 s to exit: %v after %v, want no kill after about 2 s", err, d)
	}
	if _, err := stop(context.Background(), 100*time.Millisecond); err == nil ||
		!strings.Contains(err.Error(), "had not exited 100ms after it was told to stop and was killed") {
		t.Errorf("given 100 ms: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if d, err := stop(ctx, time.Minute); err == nil || d > time.Second {
		t.Errorf("a stop wait of a minute, cancelled at 100 ms: %v after %v, want a kill at once", err, d)
	}
}

func TestPoolStartFailure(t *testing.T) {
	pool := newTestPool(t, PoolOptions{Command: func(int) *exec.Cmd {
		return exec.Command("sh", "-c", "echo 'cannot open libcuda.so.1' >&2; exit 1")
	}})
	_, err := pool.Env(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot open libcuda.so.1") || !strings.Contains(err.Error(), "device 0") {
		t.Fatalf("Env with a worker that cannot start: %v; want the device and the worker's stderr", err)
	}
}

func TestPoolDevices(t *testing.T) {
	pl := testPlan(10)
	pool := newTestPool(t, PoolOptions{Devices: []int{0, 1},
		Command: fakeCommand(envFakeBW+"=4560,4300", envFakeDelay+"=30ms")})
	if pool.Slots() != 2 {
		t.Fatalf("Slots() = %d, want 2", pool.Slots())
	}
	e := newRunEnv(t)
	sum, err := Run(context.Background(), pool, pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	// Each point exactly once, whatever the order the devices finished.
	got := fileHashes(t, e.dir)
	seen := map[string]int{}
	for _, h := range got {
		seen[h]++
	}
	for _, p := range pl.Points {
		if seen[p.Hash] != 1 {
			t.Errorf("point %s recorded %d times", p.Hash, seen[p.Hash])
		}
	}
	same(t, "summary records (plan order)", recHashes(sum.Records), planHashes(pl, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	used := map[int]int{}
	for _, r := range sum.Records {
		used[r.Env.DeviceIndex]++
		if want := fmt.Sprintf("GPU-fake-%d", r.Env.DeviceIndex); r.Env.UUID != want {
			t.Errorf("record of device %d names %s", r.Env.DeviceIndex, r.Env.UUID)
		}
		if want := []float64{4560, 4300}[r.Env.DeviceIndex]; r.Env.ReadBWGBps != want {
			t.Errorf("record of device %d has read bandwidth %g, want its device's %g", r.Env.DeviceIndex, r.Env.ReadBWGBps, want)
		}
	}
	if used[0] == 0 || used[1] == 0 {
		t.Errorf("points per device %v: both devices should have run some", used)
	}
	// 4560 vs 4300 GB/s is 6% apart: one warning, about the bandwidth.
	warns := pool.Warnings()
	if len(warns) != 1 || !strings.Contains(warns[0], "read bandwidth") || !strings.Contains(warns[0], "4560 vs") && !strings.Contains(warns[0], "4300 vs 4560") {
		t.Errorf("warnings %q: want one about the read bandwidth, naming both figures", warns)
	}
}

func TestCompareDevices(t *testing.T) {
	base := results.Env{Device: "NVIDIA H200", Arch: "sm_90", ClockMHz: 1980, MemClockMHz: 2619, ReadBWGBps: 4560}
	with := func(i int, f func(*results.Env)) results.Env {
		e := base
		e.DeviceIndex = i
		if f != nil {
			f(&e)
		}
		return e
	}
	for _, tc := range []struct {
		name  string
		envs  []results.Env
		warns []string // substrings, one per expected warning
		err   string
	}{
		{"one device", []results.Env{base}, nil, ""},
		{"within 3%", []results.Env{with(0, nil), with(1, func(e *results.Env) { e.ReadBWGBps = 4560 * 0.975 })}, nil, ""},
		{"bandwidth 5% apart", []results.Env{with(0, nil), with(1, func(e *results.Env) { e.ReadBWGBps = 4560 * 0.95 })},
			[]string{"5.3% in measured read bandwidth"}, ""},
		{"clock 10% apart", []results.Env{with(0, nil), with(1, nil), with(2, func(e *results.Env) { e.ClockMHz = 1800 })},
			[]string{"devices 2 and 0 differ by 10.0% in SM clock"}, ""},
		{"other model", []results.Env{with(0, nil), with(1, func(e *results.Env) { e.Device = "NVIDIA H100" })},
			[]string{"device 1 a NVIDIA H100"}, ""},
		{"other architecture", []results.Env{with(0, nil), with(1, func(e *results.Env) { e.Arch = "sm_80" })},
			nil, "a plan is built for one architecture"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warns, err := compareDevices(tc.envs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != len(tc.warns) {
				t.Fatalf("warnings %q, want %d", warns, len(tc.warns))
			}
			for i, w := range tc.warns {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %q lacks %q", warns[i], w)
				}
			}
		})
	}
}

func TestPoolArchMismatch(t *testing.T) {
	pool := newTestPool(t, PoolOptions{Devices: []int{0, 1}, Command: fakeCommand(envFakeArch + "=sm_90,sm_80")})
	if _, err := pool.Env(context.Background()); err == nil || !strings.Contains(err.Error(), "sm_80") {
		t.Fatalf("Env over sm_90 and sm_80: %v, want a refusal", err)
	}
}

// fakeSweepMain sweeps testPlan(fakeSweepPoints) into dir through a pool of
// fake workers, slowly enough for the test to kill it mid-run.
func fakeSweepMain(dir string) int {
	pool, err := NewPool(PoolOptions{Command: fakeCommand(envFakeDelay + "=60ms")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	if _, err := Run(context.Background(), pool, testPlan(fakeSweepPoints), RunOptions{Dir: dir}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestPoolParentKilled kills a sweeping parent with SIGKILL after a few
// points and resumes: what was recorded is a prefix of the plan, and the
// resumed sweep runs exactly the rest, so at most the point in flight was
// lost and nothing is measured twice.
func TestPoolParentKilled(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envFakeSweep+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const k = 4
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(results.FilePath(dir))
		if strings.Count(string(b), "\n") >= k {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no %d records after 60s; the child said: %s", k, stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	werr := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the child was not killed (%v): it finished first? stderr: %s", werr, stderr.String())
	}

	recs, warns, err := results.ReadFile(results.FilePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		// Append writes each line with one call, so a kill cannot cut one;
		// a truncated last line would still be repaired by the resume.
		if !strings.Contains(w.Error(), "truncated last line") {
			t.Errorf("after the kill: %v", w)
		}
	}
	pl := testPlan(fakeSweepPoints)
	n := len(recs)
	if n < k || n >= fakeSweepPoints {
		t.Fatalf("%d records after the kill, want at least %d and fewer than %d", n, k, fakeSweepPoints)
	}
	prefix := make([]int, n)
	for i := range prefix {
		prefix[i] = i
	}
	same(t, "recorded at the kill", recHashes(recs), planHashes(pl, prefix...))

	rp := replay.New(recordsFor(pl))
	e := &runEnv{dir: dir}
	sum, err := Run(context.Background(), rp, pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	rest := make([]int, 0, fakeSweepPoints-n)
	for i := n; i < fakeSweepPoints; i++ {
		rest = append(rest, i)
	}
	same(t, "run by the resume", rp.Calls(), planHashes(pl, rest...))
	if sum.Skipped != n {
		t.Errorf("resume skipped %d, want %d", sum.Skipped, n)
	}
	all := make([]int, fakeSweepPoints)
	for i := range all {
		all[i] = i
	}
	same(t, "file after the resume", fileHashes(t, dir), planHashes(pl, all...))
}
