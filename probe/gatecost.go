package probe

import (
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// Where the gates' time goes.
//
// A record's gate_sec is one number; its gate_cost splits it, so that a
// slow gate says whether the host or the device is the one to make
// faster: drawing and deriving the inputs and the float64 oracle (the
// pointRun's own clocks), the uploads (host-to-device copies, pages
// included), the device's work (launches, waiting for the stream, the
// read-backs, the digests of the read-only checks, fills, fresh module
// loads, allocations and frees), and the rest, the host's comparisons
// and bookkeeping. The device's share is read off every call the gates
// make through the device interface while a clockedDevice stands in for
// it.

// A clockedDevice is a device whose calls the gates are charged for:
// upload for writes, run for every call that waits on or works the
// device.
type clockedDevice struct {
	device
	upload, run time.Duration
}

func (c *clockedDevice) charge(d *time.Duration, start time.Time) { *d += time.Since(start) }

// write is charged to upload with the wait for the stream's earlier work
// that the device's write makes first: short, since the gates read every
// launch back before they upload again.
func (c *clockedDevice) write(dst cuda.DevPtr, b []byte) error {
	defer c.charge(&c.upload, time.Now())
	return c.device.write(dst, b)
}

func (c *clockedDevice) copyAsync(dst, src cuda.DevPtr, n int64) error {
	defer c.charge(&c.upload, time.Now())
	return c.device.copyAsync(dst, src, n)
}

func (c *clockedDevice) copyList(cs []devCopy) error {
	defer c.charge(&c.upload, time.Now())
	return c.device.copyList(cs)
}

func (c *clockedDevice) read(b []byte, src cuda.DevPtr) error {
	defer c.charge(&c.run, time.Now())
	return c.device.read(b, src)
}

func (c *clockedDevice) sync() error {
	defer c.charge(&c.run, time.Now())
	return c.device.sync()
}

func (c *clockedDevice) fill32(p cuda.DevPtr, v uint32, n int64) error {
	defer c.charge(&c.run, time.Now())
	return c.device.fill32(p, v, n)
}

func (c *clockedDevice) digest(p cuda.DevPtr, n, seg int64) ([]uint64, error) {
	defer c.charge(&c.run, time.Now())
	return c.device.digest(p, n, seg)
}

func (c *clockedDevice) holeCopy(p cuda.DevPtr, n int64) (cuda.DevPtr, func(), error) {
	defer c.charge(&c.run, time.Now())
	return c.device.holeCopy(p, n)
}

func (c *clockedDevice) launch(k *kernelPair, cfg *results.Config, g geometry, w *workspace) error {
	defer c.charge(&c.run, time.Now())
	return c.device.launch(k, cfg, g, w)
}

func (c *clockedDevice) reload(src plan.Source, k *kernelPair) (*kernelPair, error) {
	defer c.charge(&c.run, time.Now())
	return c.device.reload(src, k)
}

// alloc and free are the stale gate's scratch (a free waits for the
// device), symbol a read-back of a module's variables, unload and
// beginCapture the fresh and replay gates' driver calls, memFree a
// query: the device's, not the host's.
func (c *clockedDevice) alloc(n int64) (cuda.DevPtr, error) {
	defer c.charge(&c.run, time.Now())
	return c.device.alloc(n)
}

func (c *clockedDevice) free(p cuda.DevPtr) error {
	defer c.charge(&c.run, time.Now())
	return c.device.free(p)
}

func (c *clockedDevice) memFree() (int64, error) {
	defer c.charge(&c.run, time.Now())
	return c.device.memFree()
}

func (c *clockedDevice) symbol(k *kernelPair, name string) ([]byte, error) {
	defer c.charge(&c.run, time.Now())
	return c.device.symbol(k, name)
}

func (c *clockedDevice) unload(k *kernelPair) {
	defer c.charge(&c.run, time.Now())
	c.device.unload(k)
}

func (c *clockedDevice) beginCapture() error {
	defer c.charge(&c.run, time.Now())
	return c.device.beginCapture()
}

// stage and stageDevice are the uploads' (the first call allocates).
func (c *clockedDevice) stage(n int64) ([]byte, error) {
	defer c.charge(&c.upload, time.Now())
	return c.device.stage(n)
}

func (c *clockedDevice) stageDevice() (cuda.DevPtr, error) {
	defer c.charge(&c.upload, time.Now())
	return c.device.stageDevice()
}

func (c *clockedDevice) waitStop() error {
	defer c.charge(&c.run, time.Now())
	return c.device.waitStop()
}

func (c *clockedDevice) endCapture() (graph, error) {
	g, err := c.device.endCapture()
	if g == nil {
		return nil, err
	}
	return clockedGraph{g, c}, err
}

// A clockedGraph charges its replays' launches to the device.
type clockedGraph struct {
	graph
	c *clockedDevice
}

func (g clockedGraph) launch() error {
	defer g.c.charge(&g.c.run, time.Now())
	return g.graph.launch()
}

// timeGates runs gate with the backend's device clocked and returns its
// wall time in seconds and the split of it; the pointRun's inputs and
// oracle clocks are read as gate moved them.
func (r *pointRun) timeGates(gate func() error) (float64, *results.GateCost, error) {
	b := r.b
	c := &clockedDevice{device: b.gpu}
	b.gpu = c
	in0, or0 := r.tInputs, r.tOracle
	start := time.Now()
	err := gate()
	total := time.Since(start)
	b.gpu = c.device
	cost := &results.GateCost{
		Inputs: (r.tInputs - in0).Seconds(),
		Oracle: (r.tOracle - or0).Seconds(),
		Upload: c.upload.Seconds(),
		Device: c.run.Seconds(),
	}
	cost.Host = max(0, total.Seconds()-cost.Inputs-cost.Oracle-cost.Upload-cost.Device)
	return total.Seconds(), cost, err
}
