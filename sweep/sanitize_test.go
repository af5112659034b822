package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// envFakeSanMark names a file the fake worker writes when it runs a
// "badaccess" point; the fake sanitizer then reports memcheck errors.
const envFakeSanMark = "KTUNE_TEST_FAKE_SANITIZER_MARK"

// envFakeSanCount names a file the fake sanitizer appends a line to for
// every run (its tool), so that a test counts the runs.
const envFakeSanCount = "KTUNE_TEST_FAKE_SANITIZER_COUNT"

// envFakeSanEarly makes the fake sanitizer write a clean report before it
// runs the program, whatever the program then does: the report of a run
// whose worker never gated its point (on the H200, "0 errors" from runs
// whose workers the device's memory refused).
const envFakeSanEarly = "KTUNE_TEST_FAKE_SANITIZER_EARLY"

// envFakeSanInternal is a directory of tokens (takeToken): a fake
// sanitizer run that takes one reports its own failure, as
// compute-sanitizer's "Internal Sanitizer Error" lines do.
const envFakeSanInternal = "KTUNE_TEST_FAKE_SANITIZER_INTERNAL"

// fakeSanitizerMain is compute-sanitizer as Args calls it: options, then
// the program. It writes the tool's banner, runs the program with this
// process's standard streams and, when it has exited, writes the rest of
// the log: memcheck errors if the worker
// left the mark, a clean summary otherwise, and nothing at all for the
// initcheck tool (a run that dies before its summary).
func fakeSanitizerMain() int {
	args := os.Args[1:]
	opt := map[string]string{}
	for len(args) >= 2 && strings.HasPrefix(args[0], "--") {
		opt[args[0]] = args[1]
		args = args[2:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fake sanitizer: no program")
		return 1
	}
	mark := os.Getenv(envFakeSanMark)
	os.Remove(mark)
	if c := os.Getenv(envFakeSanCount); c != "" {
		f, err := os.OpenFile(c, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintln(f, opt["--tool"], os.Getenv(envFakeDevice))
			f.Close()
		}
	}
	tool := opt["--tool"]
	// summary is the tool's summary line of n errors, of its own kind.
	summary := func(n int) string {
		if tool == string(sanitizer.Racecheck) {
			return fmt.Sprintf("========= RACECHECK SUMMARY: %d hazards displayed (%d errors, 0 warnings)\n", n, n)
		}
		return fmt.Sprintf("========= ERROR SUMMARY: %d errors\n", n)
	}
	if os.Getenv(envFakeSanEarly) != "" {
		if err := os.WriteFile(opt["--log-file"], []byte("========= COMPUTE-SANITIZER\n"+summary(0)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fake sanitizer:", err)
			return 1
		}
	}
	if os.Getenv(envFakeSanEarly) == "" {
		if err := os.WriteFile(opt["--log-file"], []byte("========= COMPUTE-SANITIZER\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fake sanitizer:", err)
			return 1
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	runErr := cmd.Run()
	log := "========= COMPUTE-SANITIZER\n"
	switch _, err := os.Stat(mark); {
	case os.Getenv(envFakeSanEarly) != "":
		return 0
	case takeToken(os.Getenv(envFakeSanInternal)):
		log += "========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception.\n" +
			"========= \n========= Target application returned an error\n" + summary(1)
	case tool == string(sanitizer.Initcheck):
		log += "========= Uninitialized __global__ memory read of size 4 bytes\n"
	case err == nil && tool == string(sanitizer.Memcheck):
		log += "========= Invalid __global__ read of size 16 bytes\n=========     at attn_partial+0x1f0\n" +
			"========= ERROR SUMMARY: 7 errors\n"
	default:
		log += summary(0)
	}
	if err := os.WriteFile(opt["--log-file"], []byte(log), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "fake sanitizer:", err)
		return 1
	}
	if runErr != nil {
		return 1
	}
	return 0
}

// TestSanitize: the first point of each gate group runs once per tool in
// a worker under the (fake) sanitizer, gates only; a group whose worker
// the sanitizer saw misbehave fails memcheck and only memcheck, a run that
// leaves no summary fails, and the sweep then records that group's points
// gate_failed without running them while the others carry their passes.
func TestSanitize(t *testing.T) {
	pl := testPlan(4)
	for i, p := range pl.Points {
		p.GateKey = []string{"g-a", "g-a", "g-b", "g-b"}[i]
		if i >= 2 {
			p.Config.Variant = "badaccess"
		}
		p.Measure.TimeoutSec = 60
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	opts := SanitizeOptions{
		Tools:  []sanitizer.Tool{sanitizer.Memcheck, sanitizer.Racecheck},
		Binary: os.Args[0],
		Dir:    filepath.Join(dir, "sanitize"),
		Worker: fakeCommand(envFakeSanMark+"="+mark, envFakeGates+"=150"),
	}
	var log strings.Builder
	opts.Log = &log
	gates, err := Sanitize(context.Background(), pl.Points, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Each run's line says where its worker's gates spent their time.
	if n := strings.Count(log.String(), " runs done; gates 150 s: inputs 30, oracle 30, upload 30, device 30, host 30)\n"); n != 4 {
		t.Errorf("%d of 4 run lines carry the gates' split; the log:\n%s", n, log.String())
	}
	verdicts := func(key string) string {
		var s []string
		for _, g := range gates.Gates[key] {
			if g.Kind != results.GateSanitizer {
				t.Errorf("kind %q", g.Kind)
			}
			s = append(s, fmt.Sprintf("%v:%s", g.Pass, g.Detail))
		}
		return strings.Join(s, " | ")
	}
	if got, want := verdicts("g-a"), "true:memcheck: no errors | true:racecheck: no errors"; got != want {
		t.Errorf("g-a: %s, want %s", got, want)
	}
	if got := verdicts("g-b"); !strings.HasPrefix(got, "false:memcheck: 7 error(s): Invalid __global__ read of size 16 bytes | true:racecheck") {
		t.Errorf("g-b: %s", got)
	}
	for _, f := range []string{"memcheck-" + pl.Points[0].Hash + ".log", "racecheck-" + pl.Points[2].Hash + ".log"} {
		if _, err := os.Stat(filepath.Join(opts.Dir, f)); err != nil {
			t.Errorf("log %s: %v", f, err)
		}
	}

	// The sweep over the verdicts.
	inner := &countingBackend{Backend: replay.New(recordsFor(pl))}
	b := Sanitized(inner, gates)
	for i, p := range pl.Points {
		rec, err := b.Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, g := range rec.Gates {
			if g.Kind == results.GateSanitizer {
				n++
			}
		}
		switch {
		case i >= 2 && (rec.Status != results.StatusGateFailed || len(rec.Probes) != 0 || !strings.Contains(rec.Error, "memcheck: 7 error(s)")):
			t.Errorf("point %d: %s %q with %d probes", i, rec.Status, rec.Error, len(rec.Probes))
		case i < 2 && rec.Status != results.StatusOK:
			t.Errorf("point %d: %s", i, rec.Status)
		case n != 2:
			t.Errorf("point %d: %d sanitizer gates", i, n)
		}
	}
	if inner.runs != 2 {
		t.Errorf("%d points ran, want the 2 of the clean group", inner.runs)
	}

	// A run that leaves no summary proves nothing.
	opts.Tools = []sanitizer.Tool{sanitizer.Initcheck}
	gates, err = Sanitize(context.Background(), pl.Points[:1], opts)
	if err != nil {
		t.Fatal(err)
	}
	if g := gates.Gates["g-a"]; len(g) != 1 || g[0].Pass || !strings.Contains(g[0].Detail, "no summary") {
		t.Errorf("initcheck without a summary: %+v", g)
	}
}

type countingBackend struct {
	plan.Backend
	runs   int
	probes []int // how many probes each run asked for
}

func (c *countingBackend) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	c.runs++
	c.probes = append(c.probes, len(p.Probes))
	return c.Backend.Run(ctx, p)
}

// sanitizeRuns is the number of sanitized runs the fake sanitizer counted.
func sanitizeRuns(t *testing.T, count string) int {
	t.Helper()
	b, err := os.ReadFile(count)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// cleanSanitizePlan is four points in three gate groups, every kernel clean.
func cleanSanitizePlan() []*plan.Point {
	pl := testPlan(4)
	for i, p := range pl.Points {
		p.GateKey = []string{"g-a", "g-a", "g-b", "g-c"}[i]
		p.Measure.TimeoutSec = 60
	}
	return pl.Points
}

// TestSanitizeDevices: the sanitized workers take the devices in turn,
// each run's worker on its own worker's device.
func TestSanitizeDevices(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	v, err := Sanitize(context.Background(), cleanSanitizePlan(), SanitizeOptions{
		Tools: []sanitizer.Tool{sanitizer.Memcheck, sanitizer.Racecheck}, Binary: os.Args[0],
		Dir: filepath.Join(t.TempDir(), "sanitize"), Jobs: 2, Devices: []int{3, 5},
		Worker: fakeCommand(envFakeSanCount+"="+count, envFakeDelay+"=200ms")})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Gates) != 3 || len(v.Undecided) != 0 {
		t.Fatalf("verdicts %+v", v)
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		runs[f[len(f)-1]]++
	}
	if len(runs) != 2 || runs["3"] == 0 || runs["5"] == 0 || runs["3"]+runs["5"] != 6 {
		t.Errorf("runs by device %v, want the six over devices 3 and 5", runs)
	}
}

// TestSanitizeRereadsKeptPasses: a kept pass whose report, still in the
// directory, this ktune reads as a finding (as racecheck's warning-level
// hazards were once read as nothing) runs again; one whose report is gone
// is taken as it is.
func TestSanitizeRereadsKeptPasses(t *testing.T) {
	points := cleanSanitizePlan()[:1]
	dir := filepath.Join(t.TempDir(), "sanitize")
	count := filepath.Join(t.TempDir(), "count")
	sanitize := func() (Verdicts, string) {
		t.Helper()
		var log strings.Builder
		v, err := Sanitize(context.Background(), points, SanitizeOptions{Tools: []sanitizer.Tool{sanitizer.Racecheck},
			Binary: os.Args[0], Dir: dir, Log: &log, Worker: fakeCommand(envFakeSanCount + "=" + count)})
		if err != nil {
			t.Fatal(err)
		}
		return v, log.String()
	}
	if v, log := sanitize(); len(v.Gates["g-a"]) != 1 || !v.Gates["g-a"][0].Pass {
		t.Fatalf("first: %+v\n%s", v, log)
	}
	report := reportPath(dir, sanitizer.Racecheck, points[0].Hash)
	hazards := "========= COMPUTE-SANITIZER\n========= Warning: Race reported between Write access at attn_partial+0x10 in k.cu:3\n" +
		"=========     and Read access at attn_partial+0x20 in k.cu:4 [32 hazards]\n" +
		"========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n"
	if err := os.WriteFile(report, []byte(hazards), 0o644); err != nil {
		t.Fatal(err)
	}
	v, log := sanitize()
	if n := sanitizeRuns(t, count); n != 2 || !passes1(v) ||
		!strings.Contains(log, "a kept racecheck pass: its report now reads racecheck: 0 error(s) and 1 warning-level hazard(s)") {
		t.Errorf("a kept pass over warning hazards: %d runs, %+v\n%s", n, v, log)
	}
	if err := os.Remove(report); err != nil {
		t.Fatal(err)
	}
	if v, log := sanitize(); sanitizeRuns(t, count) != 2 || !passes1(v) {
		t.Errorf("a kept pass without its report: %d runs, %+v\n%s", sanitizeRuns(t, count), v, log)
	}
}

// passes1 reports a single pass for g-a.
func passes1(v Verdicts) bool {
	gs := v.Gates["g-a"]
	return len(gs) == 1 && gs[0].Pass && len(v.Undecided["g-a"]) == 0
}

// TestSanitizeKeepsRuns: every finished run is kept in the log directory,
// so a second sanitize over the same points runs nothing and gives the
// same verdicts; a damaged line is not taken for a run (that run happens
// again); a run that left no summary is not kept; and several runs at a
// time give the verdicts one at a time gives, in the same order.
func TestSanitizeKeepsRuns(t *testing.T) {
	points := cleanSanitizePlan()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	opts := SanitizeOptions{
		Tools:  []sanitizer.Tool{sanitizer.Memcheck, sanitizer.Racecheck},
		Binary: os.Args[0],
		Dir:    filepath.Join(dir, "sanitize"),
		Worker: fakeCommand(envFakeSanMark+"="+filepath.Join(dir, "mark"), envFakeSanCount+"="+count),
	}
	first, err := Sanitize(context.Background(), points, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := sanitizeRuns(t, count); n != 6 {
		t.Fatalf("%d sanitized runs, want 2 tools x 3 groups", n)
	}
	again, err := Sanitize(context.Background(), points, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := sanitizeRuns(t, count); n != 6 {
		t.Errorf("the second sanitize ran %d more", n-6)
	}
	if !reflect.DeepEqual(again, first) {
		t.Errorf("kept verdicts %v, first %v", again, first)
	}

	// Damage: a line cut short, a line that is not a sanitizer verdict.
	path := filepath.Join(opts.Dir, keptFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Each line names its kernel, as the plan has it.
	kernels := map[string]string{}
	for _, p := range points {
		kernels[p.Hash] = keptKernel(p)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r keptRun
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if want := kernels[r.Hash]; r.Kernel == "" || r.Kernel != want {
			t.Errorf("kept %s for %s names kernel %q, want %q", r.Tool, r.Hash, r.Kernel, want)
		}
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines[0] = lines[0][:len(lines[0])/2] + "\n"
	lines[1] = strings.Replace(lines[1], `"kind":"sanitizer"`, `"kind":"tolerance"`, 1)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	opts.Log = &log
	repaired, err := Sanitize(context.Background(), points, opts)
	opts.Log = nil
	if err != nil {
		t.Fatal(err)
	}
	// Progress counts the kept runs: the two run again are the fifth
	// and sixth of six, each with its time.
	var progress []string
	for _, line := range strings.Split(log.String(), "\n") {
		if _, tail, ok := strings.Cut(line, " s; "); ok && strings.HasPrefix(line, "sanitize ") {
			progress = append(progress, tail)
		}
	}
	if want := []string{"5 of 6 runs done)", "6 of 6 runs done)"}; !reflect.DeepEqual(progress, want) {
		t.Errorf("progress %q, want %q; the log:\n%s", progress, want, log.String())
	}
	if n := strings.Count(log.String(), "(kept from an earlier run)"); n != 4 {
		t.Errorf("%d kept runs logged, want 4", n)
	}
	if n := sanitizeRuns(t, count); n != 8 {
		t.Errorf("after two damaged lines %d runs happened again, want 2", n-6)
	}
	if !reflect.DeepEqual(repaired, first) {
		t.Errorf("verdicts after the damage %v, first %v", repaired, first)
	}

	// A run without a summary (the fake's initcheck) is run every time.
	opts.Tools = []sanitizer.Tool{sanitizer.Initcheck}
	for range 2 {
		if _, err := Sanitize(context.Background(), points[:1], opts); err != nil {
			t.Fatal(err)
		}
	}
	if n := sanitizeRuns(t, count); n != 10 {
		t.Errorf("an initcheck run without a summary ran %d times in two sanitizes, want 2", n-8)
	}

	// Three at a time, into a directory of its own.
	opts.Tools = []sanitizer.Tool{sanitizer.Memcheck, sanitizer.Racecheck}
	opts.Dir, opts.Jobs = filepath.Join(dir, "parallel"), 3
	parallel, err := Sanitize(context.Background(), points, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parallel, first) {
		t.Errorf("three at a time %v, one at a time %v", parallel, first)
	}
}

// TestSanitizeStopped: a sanitize stopped while runs are in flight says
// which runs it lost and how long each had had, keeps none of them, and
// the next sanitize runs them again.
func TestSanitizeStopped(t *testing.T) {
	points := cleanSanitizePlan()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	var log strings.Builder
	opts := SanitizeOptions{
		Tools:  []sanitizer.Tool{sanitizer.Memcheck},
		Binary: os.Args[0],
		Dir:    filepath.Join(dir, "sanitize"),
		Jobs:   2,
		Log:    &log,
		Worker: fakeCommand(envFakeSanCount+"="+count, envFakeDelay+"=20s"),
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel once both workers have started their runs.
	go func() {
		for b, _ := os.ReadFile(count); strings.Count(string(b), "\n") < 2; b, _ = os.ReadFile(count) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	got, err := Sanitize(ctx, points, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped sanitize returned %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the stopped sanitize took %v: it waited for its runs", took)
	}
	if len(got.Gates) != 0 {
		t.Errorf("verdicts %v from runs that never finished", got)
	}
	if n := strings.Count(log.String(), "stopped after"); n != 2 {
		t.Errorf("%d runs logged stopped, want the 2 in flight; the log:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "sanitize stopped: 0 of 3 runs done, 2 in flight lost (") {
		t.Errorf("no summary of the loss; the log:\n%s", log.String())
	}
	// Nothing was kept: the runs happen again.
	opts.Worker = fakeCommand(envFakeSanCount + "=" + count)
	opts.Log = nil
	if _, err := Sanitize(context.Background(), points, opts); err != nil {
		t.Fatal(err)
	}
	if n := sanitizeRuns(t, count); n != 2+3 {
		t.Errorf("%d runs in all, want the 2 stopped and then 3", n)
	}
}

// TestSanitizeKeptProvenance: a pass is kept with the worker check's mark
// (gated); a kept pass from an older ktune, without it, is taken and
// counted in the log; a kept failure that was only compute-sanitizer's
// own is no verdict, and its run happens again.
func TestSanitizeKeptProvenance(t *testing.T) {
	points := cleanSanitizePlan()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	opts := SanitizeOptions{
		Tools: []sanitizer.Tool{sanitizer.Memcheck}, Binary: os.Args[0], Dir: filepath.Join(dir, "sanitize"),
		Worker: fakeCommand(envFakeSanCount + "=" + count),
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := func(p *plan.Point, pass bool, detail string) string {
		b, err := json.Marshal(keptRun{Tool: sanitizer.Memcheck, Hash: p.Hash, Kernel: keptKernel(p),
			Gate: results.Gate{Kind: results.GateSanitizer, NKV: p.Config.NKV, Pass: pass, FirstDiff: -1, Detail: detail}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	lines := old(points[0], true, "memcheck: no errors") +
		old(points[2], false, "memcheck: 1 error(s): Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception.")
	path := filepath.Join(opts.Dir, keptFile)
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	opts.Log = &log
	v, err := Sanitize(context.Background(), points, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "1 kept pass(es) from an older ktune rest on the report alone") ||
		!strings.Contains(log.String(), "the sanitizer's own failure, no verdict on the kernel: that run happens again") {
		t.Errorf("the log:\n%s", log.String())
	}
	// g-a kept, g-b's failure run again (clean now), g-c run.
	if n := sanitizeRuns(t, count); n != 2 {
		t.Errorf("%d runs, want g-b's and g-c's", n)
	}
	for _, key := range []string{"g-a", "g-b", "g-c"} {
		if gs := v.Gates[key]; len(gs) != 1 || !gs[0].Pass {
			t.Errorf("%s: %+v", key, gs)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"gated":true`); n != 2 {
		t.Errorf("%d kept runs marked gated, want the 2 new ones:\n%s", n, b)
	}
}

// TestSanitizeTimeLeft: the tasks not ended, each at its tool's median
// (every tool's for a tool with none), over the workers.
func TestSanitizeTimeLeft(t *testing.T) {
	s := time.Second
	tasks := []*sanTask{
		{tool: sanitizer.Memcheck, done: true}, {tool: sanitizer.Memcheck}, {tool: sanitizer.Memcheck},
		{tool: sanitizer.Racecheck}, {tool: sanitizer.Racecheck}, {tool: sanitizer.Racecheck, undecided: true},
		{tool: sanitizer.Initcheck},
	}
	took := map[sanitizer.Tool][]time.Duration{
		sanitizer.Memcheck:  {10 * s, 30 * s, 20 * s},
		sanitizer.Racecheck: {100 * s, 300 * s},
	}
	// memcheck 2 × 20 s, racecheck 2 × 200 s, initcheck 1 × 30 s (the
	// median of all five), over 2 workers.
	if d, ok := timeLeft(tasks, took, 2); !ok || d != (40+400+30)*s/2 {
		t.Errorf("timeLeft %v %v, want %v", d, ok, (40+400+30)*s/2)
	}
	if _, ok := timeLeft(tasks, nil, 2); ok {
		t.Error("a guess before any run ended")
	}
	for d, want := range map[time.Duration]string{
		45 * s: "about 45 s left", 252 * s: "about 4 min left", 7380 * s: "about 2 h 03 min left",
	} {
		if got := leftText(d); got != want {
			t.Errorf("leftText(%v) = %q, want %q", d, got, want)
		}
	}
}
