package cuda

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// firstNVRTC is the CUDA release whose NVRTC first compiled for each SM
// number (the CUDA toolkit's release notes): what a user with an older one
// must install. A number missing here gets "a newer NVRTC".
var firstNVRTC = map[int]string{
	80: "11.0", 86: "11.1", 87: "11.4", 89: "11.8", 90: "11.8",
	100: "12.8", 101: "12.8", 120: "12.8", 103: "12.9", 121: "12.9", 110: "13.0",
}

// Suffixed architectures came after their numbers: sm_90a (the
// architecture-specific features: wgmma, setmaxnreg) with CUDA 12.0, the
// family-specific sm_100f with CUDA 12.9.
var suffixNVRTC = map[string][2]int{"a": {12, 0}, "f": {12, 9}}

var archRE = regexp.MustCompile(`^sm_([0-9]{2,3})([af]?)$`)

// ArchSupport says why an NVRTC of version major.minor, which compiles
// for the SM numbers sms (SupportedArchs), cannot compile for arch
// ("sm_90", "sm_90a"); "" when it can. The reason names the release that
// would, so that a kernel built for a newer GPU than the toolkit knows is
// reported as that, not as NVRTC's "invalid value for --gpu-architecture".
func ArchSupport(arch string, major, minor int, sms []int) string {
	m := archRE.FindStringSubmatch(arch)
	if m == nil {
		return fmt.Sprintf("%q is not a real architecture (sm_NN, optionally with a or f)", arch)
	}
	sm, _ := strconv.Atoi(m[1])
	if !slices.Contains(sms, sm) {
		need := "a newer NVRTC"
		if v, ok := firstNVRTC[sm]; ok {
			need = "NVRTC " + v + " or newer"
		}
		return fmt.Sprintf("%s needs %s; the NVRTC found is %d.%d", arch, need, major, minor)
	}
	if v, ok := suffixNVRTC[m[2]]; ok && (major < v[0] || major == v[0] && minor < v[1]) {
		return fmt.Sprintf("%s needs NVRTC %d.%d or newer; the NVRTC found is %d.%d", arch, v[0], v[1], major, minor)
	}
	return ""
}
