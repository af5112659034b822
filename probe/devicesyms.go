package probe

import (
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// checkDeviceSymbols refuses a point whose grid was planned for another
// device or kernel than the one it runs on (plan/devicesyms.go): a grid
// that reads sms at the plan's assumption, on a device with another SM
// count, or blocks_per_sm, where the kernel's occupancy at its block and
// shared memory (cuOccupancyMaxActiveBlocksPerMultiprocessor, in res)
// differs. The engine would launch another grid there, so the point would
// measure a launch the engine never makes. Checked before any launch.
func checkDeviceSymbols(launches []plan.Launch, res []results.Resource, sms int) error {
	for i, l := range launches {
		if l.SMs != 0 && l.SMs != sms {
			return failPoint(results.StatusError, "%s: its grid was planned for %d SMs (sms), the device has %d: plan with --sms %d", l.Entry, l.SMs, sms, sms)
		}
		if l.BlocksPerSM != 0 && i < len(res) && res[i].MaxBlocksPerSM != l.BlocksPerSM {
			return failPoint(results.StatusError, "%s: its grid was planned for %d blocks per SM (blocks_per_sm), the kernel has %d at block %v and %d bytes of shared memory: plan and sweep with --blocks-per-sm %d",
				l.Entry, l.BlocksPerSM, res[i].MaxBlocksPerSM, l.Block, l.Shared, res[i].MaxBlocksPerSM)
		}
	}
	return nil
}
