package probe

import (
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// checkDeviceSymbols refuses a point that was planned for another device
// or kernel than the one it runs on (plan/devicesyms.go): a grid that
// reads sms at the plan's assumption, on a device with another SM count,
// or blocks_per_sm, where the kernel's occupancy at its block and shared
// memory (cuOccupancyMaxActiveBlocksPerMultiprocessor, in res) differs,
// or a launch whose spec declares blocks_per_sm, read by its grid or not,
// where the kernel has another;
// and planned arrays, scratch or shared sizes or arguments that read sms (p.SMs) on
// a device with another SM count. The engine would launch another grid,
// or plan other work, there, so the point would measure a launch the
// engine never makes. Checked before any launch.
func checkDeviceSymbols(p *plan.Point, res []results.Resource, sms int) error {
	if p.SMs != 0 && p.SMs != sms {
		return failPoint(results.StatusError, "%s: its planned arrays, scratch and shared sizes and arguments were planned for %d SMs (sms), the device has %d: plan with --sms %d", p.Config.Variant, p.SMs, sms, sms)
	}
	for i, l := range p.Launches {
		if l.SMs != 0 && l.SMs != sms {
			return failPoint(results.StatusError, "%s: its grid was planned for %d SMs (sms), the device has %d: plan with --sms %d", l.Entry, l.SMs, sms, sms)
		}
		if l.BlocksPerSM != 0 && i < len(res) && res[i].MaxBlocksPerSM != l.BlocksPerSM {
			if l.BlocksPerSMDeclared {
				// The engine's fact, not an assumption a flag changes.
				return failPoint(results.StatusError, "%s: the spec's launch declares blocks_per_sm %d, the kernel has %d blocks per SM at block %v and %d bytes of shared memory: the spec or the kernel's build is wrong (the engine's host would size its work for %d)",
					l.Entry, l.BlocksPerSM, res[i].MaxBlocksPerSM, l.Block, l.Shared, res[i].MaxBlocksPerSM)
			}
			return failPoint(results.StatusError, "%s: its grid was planned for %d blocks per SM (blocks_per_sm), the kernel has %d at block %v and %d bytes of shared memory: plan and sweep with --blocks-per-sm %d",
				l.Entry, l.BlocksPerSM, res[i].MaxBlocksPerSM, l.Block, l.Shared, res[i].MaxBlocksPerSM)
		}
	}
	return nil
}
