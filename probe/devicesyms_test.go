package probe

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

func TestCheckDeviceSymbols(t *testing.T) {
	ls := []plan.Launch{{Entry: "part", SMs: 132, BlocksPerSM: 2, Block: [3]int{128, 1, 1}}, {Entry: "comb"}}
	pt := &plan.Point{Launches: ls}
	res := []results.Resource{{Kernel: "part", MaxBlocksPerSM: 2}, {Kernel: "comb", MaxBlocksPerSM: 16}}
	if err := checkDeviceSymbols(pt, res, 132); err != nil {
		t.Errorf("as planned: %v", err)
	}
	for _, c := range []struct {
		sms, bps int
		says     string
	}{
		{sms: 66, bps: 2, says: "planned for 132 SMs (sms), the device has 66: plan with --sms 66"},
		{sms: 132, bps: 3, says: "planned for 2 blocks per SM (blocks_per_sm), the kernel has 3"},
	} {
		r := []results.Resource{{Kernel: "part", MaxBlocksPerSM: c.bps}, res[1]}
		err := checkDeviceSymbols(pt, r, c.sms)
		var pe *pointError
		if err == nil || !errors.As(err, &pe) || pe.status != results.StatusError || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%d SMs, %d blocks per SM: %v; want the point refused saying %q", c.sms, c.bps, err, c.says)
		}
	}
	// A launch that reads neither symbol is never refused.
	if err := checkDeviceSymbols(&plan.Point{Launches: []plan.Launch{{Entry: "comb"}}}, res[1:], 7); err != nil {
		t.Errorf("no device symbols: %v", err)
	}
	// Planned arrays, scratch or arguments that read sms: refused on
	// another SM count, even where no grid reads it.
	hosted := &plan.Point{Config: results.Config{Variant: "fi"}, Launches: []plan.Launch{{Entry: "comb"}}, SMs: 114}
	if err := checkDeviceSymbols(hosted, res[1:], 114); err != nil {
		t.Errorf("planned for the device's 114 SMs: %v", err)
	}
	err := checkDeviceSymbols(hosted, res[1:], 132)
	var pe *pointError
	if want := "fi: its planned arrays, scratch and shared sizes and arguments were planned for 114 SMs (sms), the device has 132: plan with --sms 132"; err == nil ||
		!errors.As(err, &pe) || pe.status != results.StatusError || err.Error() != want {
		t.Errorf("planned for 114 SMs on 132: %v; want the point refused saying %q", err, want)
	}
}

// On the fake device (132 SMs), a point whose planned arrays read sms:
// planned for the device, the probe writes them at the point's SM count
// (the tiles' length, sms / 4 - 1, is the 32 entries of its planned
// size at 132; without sms the arrays could not be written); planned for
// another count, it is refused before any launch.
func TestPointSMsOnFake(t *testing.T) {
	for _, sms := range []int{132, 114} {
		f := newFakeDevice()
		f.models["k"] = fakeModel{nkvFromPlanned: "lens"}
		b := fakeBackend(t, f)
		if _, err := b.Env(context.Background()); err != nil {
			t.Fatal(err)
		}
		p := plannedPoint("nkv")
		p.Planned[2].Length = "sms / 4 - 1"
		p.SMs = sms
		rec, err := b.Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if sms != 132 {
			if want := "planned for 114 SMs (sms), the device has 132: plan with --sms 132"; rec.Status != results.StatusError || !strings.Contains(rec.Error, want) || f.calls["launch"] != 0 {
				t.Errorf("planned for %d SMs: status %s, error %q, %d launches; want refused before any launch saying %q", sms, rec.Status, rec.Error, f.calls["launch"], want)
			}
			continue
		}
		if rec.Status != results.StatusOK || f.calls["launch"] == 0 {
			t.Fatalf("planned for the device's SMs: status %s (%s), %d launches", rec.Status, rec.Error, f.calls["launch"])
		}
		w := b.ws
		d := w.l.dims(p.Config.Shape)
		if d.SMs != 132 {
			t.Fatalf("the workspace's dims carry %d SMs, want 132", d.SMs)
		}
		pos := f.positions(w, 2)
		want, err := abi.PlannedBytes(d, p.Planned, d.Env(p.Config.Defines), []int{int(pos[0]) + 1, int(pos[1]) + 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.at(w.planned)[:len(want)]; string(got) != string(want) {
			t.Errorf("planned arrays on the device %v, want %v", got, want)
		}
	}
}

// On the fake device (132 SMs): a point whose grid was planned for the
// device and the kernel's occupancy runs; one planned for other SMs or
// another occupancy is refused before any launch.
func TestDeviceSymbolsOnFake(t *testing.T) {
	for _, c := range []struct {
		sms, planned, real int
		says               string
	}{
		{132, 2, 2, ""},
		{100, 2, 2, "planned for 100 SMs (sms), the device has 132"},
		{132, 2, 3, "planned for 2 blocks per SM (blocks_per_sm), the kernel has 3"},
	} {
		f := newFakeDevice()
		f.models["k"] = fakeModel{}
		f.blocksPerSM = c.real
		b := fakeBackend(t, f)
		p := fakePoint("k", 100)
		p.Launches[0].SMs, p.Launches[0].BlocksPerSM = c.sms, c.planned
		if _, err := b.Env(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec, err := b.Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.says == "" && rec.Status != results.StatusOK:
			t.Errorf("%+v: status %s (%s), want ok", c, rec.Status, rec.Error)
		case c.says != "" && (rec.Status != results.StatusError || !strings.Contains(rec.Error, c.says) || f.calls["launch"] != 0):
			t.Errorf("%+v: status %s, error %q, %d launches; want refused before any launch saying %q", c, rec.Status, rec.Error, f.calls["launch"], c.says)
		}
	}
}

// On the fake device, a launch whose spec declares blocks_per_sm and whose
// grid does not read it (no sms, a fixed grid) is checked all the same:
// it runs where the kernel's occupancy is the declared one and is refused
// before any launch where it is not, with a message that blames the spec
// or the build, not the flag.
func TestDeclaredBlocksPerSMOnFake(t *testing.T) {
	for _, real := range []int{8, 6} {
		f := newFakeDevice()
		f.models["k"] = fakeModel{}
		f.blocksPerSM = real
		b := fakeBackend(t, f)
		p := fakePoint("k", 100)
		p.Launches[0].BlocksPerSM, p.Launches[0].BlocksPerSMDeclared = 8, true
		if _, err := b.Env(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec, err := b.Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if real == 8 {
			if rec.Status != results.StatusOK || f.calls["launch"] == 0 {
				t.Errorf("declared 8, the kernel has 8: status %s (%s), %d launches; want ok", rec.Status, rec.Error, f.calls["launch"])
			}
			continue
		}
		want := "attn_partial: the spec's launch declares blocks_per_sm 8, the kernel has 6 blocks per SM at block [32 1 1] and 0 bytes of shared memory: the spec or the kernel's build is wrong"
		if rec.Status != results.StatusError || !strings.Contains(rec.Error, want) || strings.Contains(rec.Error, "--blocks-per-sm") || f.calls["launch"] != 0 {
			t.Errorf("declared 8, the kernel has 6: status %s, error %q, %d launches; want refused before any launch saying %q", rec.Status, rec.Error, f.calls["launch"], want)
		}
	}
}
