package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/cuda"
)

// TestDoctorWithoutDriver runs on machines without the NVIDIA driver: doctor
// must name the missing library with the loader's reason and exit 1.
func TestDoctorWithoutDriver(t *testing.T) {
	_, openErr := cuda.Open()
	if openErr == nil {
		t.Skip("the CUDA driver is present; this test covers its absence")
	}
	var out, errb bytes.Buffer
	err := run(&out, &errb, []string{"doctor"})
	if err == nil {
		t.Fatalf("doctor succeeded without a driver:\n%s", out.String())
	}
	if code := exitCode(err); code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	if !strings.Contains(out.String(), "driver         MISSING: "+openErr.Error()) {
		t.Errorf("output does not carry the loader's error %q:\n%s", openErr, out.String())
	}
}

func TestDoctorUsage(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(&out, &errb, []string{"doctor", "extra"})
	if exitCode(err) != exitUsage {
		t.Errorf("stray argument: exit %d, want %d", exitCode(err), exitUsage)
	}
	if err := run(&out, &errb, []string{"doctor", "-h"}); err != nil {
		t.Errorf("-h: %v", err)
	}
	if !strings.Contains(errb.String(), "$ ktune doctor") {
		t.Errorf("usage lacks examples:\n%s", errb.String())
	}
}
