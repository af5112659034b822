package evidence

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/results"
)

// EnvDiff says how two records' machines differ in what changes a timing:
// the physical GPU (its UUID, when both sides recorded one), its model,
// the driver, NVRTC, and the default SM and memory clocks; "" when they
// agree. Host and ktune build are left out: they do not change the GPU.
func EnvDiff(a, b *results.Env) string {
	var d []string
	if a.Device != b.Device {
		d = append(d, fmt.Sprintf("device %s vs %s", a.Device, b.Device))
	}
	if a.UUID != b.UUID && a.UUID != "" && b.UUID != "" {
		d = append(d, fmt.Sprintf("GPU %s vs %s", a.UUID, b.UUID))
	}
	if a.Driver != b.Driver {
		d = append(d, fmt.Sprintf("driver %s vs %s", a.Driver, b.Driver))
	}
	if a.NVRTC != b.NVRTC {
		d = append(d, fmt.Sprintf("nvrtc %s vs %s", a.NVRTC, b.NVRTC))
	}
	if a.ClockMHz != b.ClockMHz {
		d = append(d, fmt.Sprintf("SM clock %g vs %g MHz", a.ClockMHz, b.ClockMHz))
	}
	if a.MemClockMHz != b.MemClockMHz {
		d = append(d, fmt.Sprintf("memory clock %g vs %g MHz", a.MemClockMHz, b.MemClockMHz))
	}
	return strings.Join(d, ", ")
}
