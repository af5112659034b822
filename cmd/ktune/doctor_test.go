package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/cuda"
)

// TestDoctorWithoutDriver runs on machines where no GPU can be used: the
// driver's library is missing, or it loads and cuInit finds no device (the
// CUDA toolkit without a GPU). doctor must give the loader's or the
// driver's reason whole, in short lines, say what works here, and exit 1.
func TestDoctorWithoutDriver(t *testing.T) {
	_, openErr := cuda.Open()
	if openErr == nil {
		t.Skip("the CUDA driver opens here; this test covers a machine where it does not")
	}
	var out, errb bytes.Buffer
	err := run(&out, &errb, []string{"doctor"})
	if err == nil {
		t.Fatalf("doctor succeeded without a driver:\n%s", out.String())
	}
	if code := exitCode(err); code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	text := out.String()
	checkDoctorLines(t, text)
	flat := strings.Join(strings.Fields(text), " ")
	var le *cuda.LibraryError
	if errors.As(openErr, &le) {
		for _, tried := range le.Tried {
			if !strings.Contains(flat, strings.Join(strings.Fields(tried), " ")) {
				t.Errorf("output lacks the try %q:\n%s", tried, text)
			}
		}
	} else if !strings.Contains(flat, openErr.Error()) || !strings.Contains(text, "a usable device") {
		t.Errorf("output does not carry the driver's error %q as a missing device:\n%s", openErr, text)
	}
	for _, want := range []string{"What works on this machine:", "ktune plan SPEC", "ktune report RESULTS", "--backend replay"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	_, nvErr := cuda.OpenNVRTC()
	if checkLine := strings.Contains(text, "\n  ktune check SPEC..."); checkLine != (nvErr == nil) {
		t.Errorf("NVRTC loads: %v, but check is offered: %v:\n%s", nvErr == nil, checkLine, text)
	}
}

// checkDoctorLines fails t for a line of doctor's longer than doctorWidth
// that is not one word.
func checkDoctorLines(t *testing.T, text string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if len(l) > doctorWidth && len(strings.Fields(l)) > 1 {
			t.Errorf("a line of %d characters (at most %d):\n%s", len(l), doctorWidth, l)
		}
	}
}

// TestDoctorMissingLibrary: a library not found after many tries (NVRTC's
// search path is long) is one line per try, in short lines, none lost.
func TestDoctorMissingLibrary(t *testing.T) {
	le := &cuda.LibraryError{Lib: "libnvrtc.so.13", Hint: "install the CUDA toolkit's NVRTC (cuda-nvrtc-13-0; for ktune check, Debian's libnvrtc11.2 from non-free is enough) or set KTUNE_NVRTC=/path/to/libnvrtc.so.13 or CUDA_HOME"}
	for _, dir := range []string{"", "/usr/local/cuda/lib64/", "/usr/local/cuda-13.0/targets/x86_64-linux/lib/", "/opt/nvidia/hpc_sdk/Linux_x86_64/lib/"} {
		for _, so := range []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"} {
			le.Tried = append(le.Tried, dir+so+": cannot open shared object file: No such file or directory")
		}
	}
	if len(le.Error()) < 900 {
		t.Fatalf("the error is %d characters; the case wants a long one", len(le.Error()))
	}
	var out bytes.Buffer
	writeMissing(&out, "nvrtc", fmt.Errorf("opening NVRTC: %w", le))
	text := out.String()
	checkDoctorLines(t, text)
	flat := strings.Join(strings.Fields(text), " ")
	for _, want := range append(append([]string{}, le.Tried...), le.Hint, "MISSING: libnvrtc.so.13 not found") {
		if !strings.Contains(flat, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "\n"); n < len(le.Tried)+2 {
		t.Errorf("%d lines for %d tries: the tries are not one a line:\n%s", n, len(le.Tried), text)
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
