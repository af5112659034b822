// Package nvml is the only code in ktune that talks to the NVIDIA
// Management Library (libnvidia-ml.so.1): it reads a board's total energy
// counter and its power draw, which is all ktune asks of NVML.
//
// NVML ships with the driver, and like the driver it is loaded at run time
// with purego, so ktune builds with CGO_ENABLED=0 and a machine without it
// only loses the energy numbers: Open returns an error that wraps
// ErrNoNVML (a *LibraryError naming what was tried), never a panic. Open
// is idempotent: the library is loaded and nvmlInit_v2 called once per
// process, and every later call returns the same *NVML.
//
// What NVML documents of the two readings, and so what ktune assumes:
//
//   - nvmlDeviceGetTotalEnergyConsumption: the board's energy since the
//     driver was last reloaded, in millijoules, for Volta and newer. Its
//     unit is its resolution: a difference of two reads is exact to 1 mJ
//     at best. NVML does not document how often the counter is updated
//     (other users report 20-100 ms on recent boards), so the caller
//     measures that period itself (probe's energy window) rather than
//     trusting a constant.
//   - nvmlDeviceGetPowerUsage: the board's power in milliwatts; on Ampere
//     (but GA100) and newer it is averaged over one second, so it says
//     what the board drew around a window, not during a 10 µs step.
package nvml
