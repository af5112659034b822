package cuda

import (
	"strings"
	"testing"
)

func TestArchSupport(t *testing.T) {
	sms := []int{80, 86, 89, 90}
	for arch, want := range map[string]string{
		"sm_90":   "",
		"sm_90a":  "sm_90a needs NVRTC 12.0 or newer; the NVRTC found is 11.8",
		"sm_100":  "sm_100 needs NVRTC 12.8 or newer",
		"sm_100f": "sm_100f needs NVRTC 12.8 or newer",
		"sm_130":  "sm_130 needs a newer NVRTC",
		"sm90":    "not a real architecture",
	} {
		got := ArchSupport(arch, 11, 8, sms)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", arch, got, want)
		}
	}
	if got := ArchSupport("sm_90a", 12, 4, append(sms, 100)); got != "" {
		t.Errorf("sm_90a under 12.4: %q", got)
	}
	if got := ArchSupport("sm_100f", 12, 8, append(sms, 100)); !strings.Contains(got, "12.9") {
		t.Errorf("sm_100f under 12.8: %q, want it to need 12.9", got)
	}
}
