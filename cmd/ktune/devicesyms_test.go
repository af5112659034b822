package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// ktune plan of a grid sized from the device says what it assumed: the
// architecture's SM count or --sms, and --blocks-per-sm.
func TestPlanSaysDeviceAssumptions(t *testing.T) {
	path := writeSpecWithPTX(t, `name: persistent
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.ptx
    launches:
      - {entry: part, grid: ["sms * blocks_per_sm"], block: [128], args: [q, k, v, positions, partial, heads]}
      - {entry: comb, grid: [heads, batch], block: [head_dim], args: [partial, out, heads]}
`)
	for _, c := range []struct {
		args []string
		says []string
	}{
		{nil, []string{"assumed: sms = 132 (the default of sm_90", "assumed: blocks_per_sm = 1", "│ 132×1×1 "}},
		{[]string{"--sms", "100", "--blocks-per-sm", "2"}, []string{"assumed: sms = 100 (--sms", "assumed: blocks_per_sm = 2", "│ 200×1×1 "}},
	} {
		stdout, stderr, code := runCmd(append([]string{"plan", path}, c.args...)...)
		for _, s := range c.says {
			if code != exitOK || !strings.Contains(stdout, s) {
				t.Errorf("plan %v: exit %d, output lacks %q:\n%s%s", c.args, code, s, stdout, stderr)
			}
		}
	}
	if stdout, _, _ := runCmd("plan", "../../experiments/slice.yaml"); strings.Contains(stdout, "assumed:") {
		t.Error("a plan whose grids read no device symbol prints assumptions")
	}
}

// paddedSpec's planned arrays, scratch and an argument read sms; no grid
// does.
const paddedSpec = `name: padded
shapes: [{name: s, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: f16, batch: 2, capacity: 4096}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.cu
    planned:
      tiles: {expand: "cdiv(nkv, cdiv(max_nkv, 8 * sms / kv_heads / batch))", value: j, length: "8 * sms / kv_heads"}
    scratch:
      tmp: {bytes: "8 * sms / kv_heads * heads * 4"}
    launches:
      - {entry: k, grid: [SPLITS, kv_heads], block: [32], args: [out, "planned:tiles", "scratch:tmp", "u32:8 * sms / kv_heads"]}
`

func writePadded(t *testing.T) string {
	t.Helper()
	path := writeSpec(t, paddedSpec)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "k.cu"), []byte("// k\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ktune plan of a spec whose planned arrays, scratch and arguments read
// sms, and no grid, says the SM count it assumed.
func TestPlanSaysPointSMs(t *testing.T) {
	path := writePadded(t)
	for _, c := range []struct {
		args []string
		says string
	}{
		{nil, "assumed: sms = 132 (the default of sm_90"},
		{[]string{"--sms", "114"}, "assumed: sms = 114 (--sms"},
	} {
		stdout, stderr, code := runCmd(append([]string{"plan", path}, c.args...)...)
		if code != exitOK || !strings.Contains(stdout, c.says) || strings.Contains(stdout, "blocks_per_sm") {
			t.Errorf("plan %v: exit %d, output lacks %q (or assumes blocks_per_sm):\n%s%s", c.args, code, c.says, stdout, stderr)
		}
	}
}

// smsDevice is a device of 114 SMs that records the SM count of each point
// it is given.
type smsDevice struct{ got []int }

func (d *smsDevice) Env(context.Context) (results.Env, error) {
	return results.Env{Device: "NVIDIA H100 PCIe", Arch: "sm_90", SMs: 114, ReadBWGBps: 2000}, nil
}
func (d *smsDevice) Close() error { return nil }
func (d *smsDevice) Run(_ context.Context, p *plan.Point) (results.Record, error) {
	d.got = append(d.got, p.SMs)
	return results.Record{Config: p.Config, Status: results.StatusError, Error: "not run"}, nil
}

// A sweep plans the points whose planned arrays, scratch and arguments
// read sms for its device's SM count, not the architecture's default.
func TestSweepPointSMsFromDevice(t *testing.T) {
	dev := &smsDevice{}
	var stdout, stderr bytes.Buffer
	err := runSweep(context.Background(), &stdout, &stderr, []string{writePadded(t), "-o", t.TempDir()}, tuneDeps(dev))
	if len(dev.got) == 0 {
		t.Fatalf("no point ran: %v\n%s", err, stderr.String())
	}
	for _, n := range dev.got {
		if n != 114 {
			t.Errorf("a point planned for %d SMs on a device of 114", n)
		}
	}
}

// ktune plan says which launches took the spec's declared blocks_per_sm
// and which --blocks-per-sm's: the spec's wins for the launch that
// declares it.
func TestPlanSaysDeclaredBlocksPerSM(t *testing.T) {
	path := writeSpecWithPTX(t, `name: declared
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.ptx
    launches:
      - {entry: part, grid: ["sms * blocks_per_sm"], block: [128], blocks_per_sm: 12, args: [q, k, v, positions, partial, heads]}
      - {entry: comb, grid: ["sms * blocks_per_sm"], block: [head_dim], args: [partial, out, heads]}
`)
	for _, c := range []struct {
		args []string
		says []string
	}{
		{nil, []string{
			"assumed: blocks_per_sm = 12 for p launches[0] (the spec's blocks_per_sm; --blocks-per-sm does not change it;",
			"assumed: blocks_per_sm = 1 for p launches[1] (--blocks-per-sm; default 1;",
			"│ 1584×1×1 ",
		}},
		{[]string{"--blocks-per-sm", "2"}, []string{
			"assumed: blocks_per_sm = 12 for p launches[0] (the spec's blocks_per_sm;",
			"assumed: blocks_per_sm = 2 for p launches[1] (--blocks-per-sm;",
			"│ 1584×1×1 ",
		}},
	} {
		stdout, stderr, code := runCmd(append([]string{"plan", path}, c.args...)...)
		for _, s := range c.says {
			if code != exitOK || !strings.Contains(stdout, s) {
				t.Errorf("plan %v: exit %d, output lacks %q:\n%s%s", c.args, code, s, stdout, stderr)
			}
		}
		if n := strings.Count(stdout, "assumed: blocks_per_sm"); n != 2 {
			t.Errorf("plan %v: %d blocks_per_sm assumptions, want 2:\n%s", c.args, n, stdout)
		}
	}
}

// writeSpecWithPTX writes the spec body beside an empty PTX image, k.ptx,
// that its variants load.
func writeSpecWithPTX(t *testing.T, body string) string {
	t.Helper()
	path := writeSpec(t, body)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "k.ptx"), []byte(".version 8.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
