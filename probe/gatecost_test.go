package probe

import (
	"math"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// slowDevice is the fake device with a known cost per upload and per
// launch, so that a record's gate_cost can be held to where the time went.
type slowDevice struct {
	*fakeDevice
	writes, launches int
}

const (
	slowWrite  = 2 * time.Millisecond
	slowLaunch = time.Millisecond
)

func (s *slowDevice) write(dst cuda.DevPtr, b []byte) error {
	s.writes++
	time.Sleep(slowWrite)
	return s.fakeDevice.write(dst, b)
}

func (s *slowDevice) launch(k *kernelPair, c *results.Config, g geometry, w *workspace) error {
	s.launches++
	time.Sleep(slowLaunch)
	return s.fakeDevice.launch(k, c, g, w)
}

// TestGateCostSplit: the uploads' time is charged to upload_sec and the
// launches' to device_sec, the five parts add up to gate_sec, and the
// device is given back unclocked after the gates.
func TestGateCostSplit(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	s := &slowDevice{fakeDevice: f}
	b.gpu = s
	// No probe: every upload and launch of the run is the gates'.
	p := fakePoint("good", 100)
	p.Probes = nil
	rec := run(t, b, p)
	if rec.Status != results.StatusOK {
		t.Fatalf("status %s: %s", rec.Status, rec.Error)
	}
	c := rec.GateCost
	if c == nil {
		t.Fatal("no gate_cost in the record")
	}
	if s.writes == 0 || s.launches == 0 {
		t.Fatalf("%d writes, %d launches", s.writes, s.launches)
	}
	if want := (time.Duration(s.writes) * slowWrite).Seconds(); c.Upload < want {
		t.Errorf("upload_sec %.4f, want at least %.4f (%d writes)", c.Upload, want, s.writes)
	}
	if want := (time.Duration(s.launches) * slowLaunch).Seconds(); c.Device < want {
		t.Errorf("device_sec %.4f, want at least %.4f (%d launches)", c.Device, want, s.launches)
	}
	// The sleeps are the device's: what is left to the host is less than
	// the gates' time without them.
	slept := (time.Duration(s.writes)*slowWrite + time.Duration(s.launches)*slowLaunch).Seconds()
	if host := c.Inputs + c.Oracle + c.Host; host > rec.GateSec-slept+1e-3 {
		t.Errorf("host share %.4f of gate_sec %.4f with %.4f slept on the device", host, rec.GateSec, slept)
	}
	for name, v := range map[string]float64{"inputs": c.Inputs, "oracle": c.Oracle, "upload": c.Upload, "device": c.Device, "host": c.Host} {
		if v < 0 || math.IsNaN(v) {
			t.Errorf("%s_sec %v", name, v)
		}
	}
	if sum := c.Inputs + c.Oracle + c.Upload + c.Device + c.Host; math.Abs(sum-rec.GateSec) > 1e-6 {
		t.Errorf("parts add up to %.6f, gate_sec %.6f", sum, rec.GateSec)
	}
	if c.Inputs <= 0 || c.Oracle <= 0 {
		t.Errorf("inputs_sec %v oracle_sec %v: the host's clocks were not read", c.Inputs, c.Oracle)
	}
	if _, clocked := b.gpu.(*clockedDevice); clocked || b.gpu != device(s) {
		t.Errorf("after the gates the backend's device is %T", b.gpu)
	}
	// A later point of the group copies the verdict and checks its own
	// timed lengths: its split is its own, not the first point's again.
	p2 := fakePoint("good", 29)
	p2.Probes = nil
	rec2 := run(t, b, p2)
	c2 := rec2.GateCost
	if c2 == nil || c2.Upload > c.Upload {
		t.Fatalf("second point's gate_cost %+v, first %+v", c2, c)
	}
	if sum := c2.Inputs + c2.Oracle + c2.Upload + c2.Device + c2.Host; math.Abs(sum-rec2.GateSec) > 1e-6 {
		t.Errorf("second point: parts add up to %.6f, gate_sec %.6f", sum, rec2.GateSec)
	}
}

// sleepyDevice is the fake device with every call but the one under test
// free of cost, and that one slept for.
type sleepyDevice struct {
	*fakeDevice
	slow string
}

const sleepy = 5 * time.Millisecond

func (s *sleepyDevice) nap(call string) {
	if call == s.slow {
		time.Sleep(sleepy)
	}
}
func (s *sleepyDevice) alloc(n int64) (cuda.DevPtr, error) {
	s.nap("alloc")
	return s.fakeDevice.alloc(n)
}
func (s *sleepyDevice) free(p cuda.DevPtr) error { s.nap("free"); return s.fakeDevice.free(p) }
func (s *sleepyDevice) memFree() (int64, error)  { s.nap("memFree"); return s.fakeDevice.memFree() }
func (s *sleepyDevice) symbol(k *kernelPair, name string) ([]byte, error) {
	s.nap("symbol")
	return s.fakeDevice.symbol(k, name)
}
func (s *sleepyDevice) unload(k *kernelPair) { s.nap("unload"); s.fakeDevice.unload(k) }
func (s *sleepyDevice) beginCapture() error {
	s.nap("beginCapture")
	return s.fakeDevice.beginCapture()
}
func (s *sleepyDevice) stage(n int64) ([]byte, error) {
	s.nap("stage")
	return s.fakeDevice.stage(n)
}
func (s *sleepyDevice) stageDevice() (cuda.DevPtr, error) {
	s.nap("stageDevice")
	return s.fakeDevice.stageDevice()
}

// TestGateCostCharges: each driver call the gates make outside launches
// and writes is charged to the device or the uploads, not left to the
// host's share.
func TestGateCostCharges(t *testing.T) {
	calls := map[string]struct {
		call   func(d device)
		upload bool
	}{
		"alloc":        {func(d device) { d.alloc(64) }, false},
		"free":         {func(d device) { d.free(0) }, false},
		"memFree":      {func(d device) { d.memFree() }, false},
		"symbol":       {func(d device) { d.symbol(nil, "x") }, false},
		"unload":       {func(d device) { d.unload(nil) }, false},
		"beginCapture": {func(d device) { d.beginCapture(); d.endCapture() }, false},
		"stage":        {func(d device) { d.stage(64) }, true},
		"stageDevice":  {func(d device) { d.stageDevice() }, true},
	}
	for name, c := range calls {
		s := &sleepyDevice{fakeDevice: newFakeDevice(), slow: name}
		cd := &clockedDevice{device: s}
		c.call(cd)
		got, other := cd.run, cd.upload
		if c.upload {
			got, other = cd.upload, cd.run
		}
		if got < sleepy || other >= sleepy {
			t.Errorf("%s: %v charged where it belongs, %v elsewhere; want at least %v and less", name, got, other, sleepy)
		}
	}
}
