package probe

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

func TestCheckDeviceSymbols(t *testing.T) {
	ls := []plan.Launch{{Entry: "part", SMs: 132, BlocksPerSM: 2, Block: [3]int{128, 1, 1}}, {Entry: "comb"}}
	res := []results.Resource{{Kernel: "part", MaxBlocksPerSM: 2}, {Kernel: "comb", MaxBlocksPerSM: 16}}
	if err := checkDeviceSymbols(ls, res, 132); err != nil {
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
		err := checkDeviceSymbols(ls, r, c.sms)
		var pe *pointError
		if err == nil || !errors.As(err, &pe) || pe.status != results.StatusError || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%d SMs, %d blocks per SM: %v; want the point refused saying %q", c.sms, c.bps, err, c.says)
		}
	}
	// A launch that reads neither symbol is never refused.
	if err := checkDeviceSymbols([]plan.Launch{{Entry: "comb"}}, res[1:], 7); err != nil {
		t.Errorf("no device symbols: %v", err)
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
