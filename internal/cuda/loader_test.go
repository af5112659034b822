package cuda

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/ktune/ktune/internal/golden"
)

// fakeOpener stands in for dlopen: it fails every path with the dlerror text
// a missing file produces, except those listed in loads.
type fakeOpener struct {
	loads map[string]library
	tried []string
}

func (o *fakeOpener) open(path string) (library, error) {
	o.tried = append(o.tried, path)
	if l, ok := o.loads[path]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("%s: cannot open shared object file: No such file or directory\n", path)
}

// fakeLib resolves every symbol to a dummy address except those in missing.
// No test calls through the dummies: bind registers nothing when a symbol
// is missing, and every test here has one missing.
type fakeLib struct {
	missing map[string]bool
	looked  []string
}

func (l *fakeLib) lookup(sym string) (uintptr, error) {
	l.looked = append(l.looked, sym)
	if l.missing[sym] {
		return 0, fmt.Errorf("undefined symbol: %s", sym)
	}
	return 0x1000, nil
}

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDriverMissingLibrary(t *testing.T) {
	o := &fakeOpener{}
	_, err := openDriver(o)
	var le *LibraryError
	if !errors.As(err, &le) {
		t.Fatalf("openDriver with no libcuda: got %v (%T), want *LibraryError", err, err)
	}
	if !slices.Equal(o.tried, []string{"libcuda.so.1"}) {
		t.Errorf("tried %q, want only the soname libcuda.so.1", o.tried)
	}
	msg := err.Error()
	for _, want := range []string{
		"libcuda.so.1 not found",
		"libcuda.so.1: cannot open shared object file: No such file or directory", // the dlerror text, kept
		"install the NVIDIA driver",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message %q keeps the dlerror's trailing newline", msg)
	}
}

func TestNVRTCSearchOrder(t *testing.T) {
	tests := []struct {
		name string
		env  func(string) string
		want []string
	}{
		{"no CUDA_HOME", env(), []string{
			"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13",
			"libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.12",
			"libnvrtc.so.11.2", "/usr/local/cuda/lib64/libnvrtc.so.11.2",
			"libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so",
		}},
		{"CUDA_HOME", env("CUDA_HOME", "/opt/cuda-13.0"), []string{
			"libnvrtc.so.13", "/opt/cuda-13.0/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13",
			"libnvrtc.so.12", "/opt/cuda-13.0/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.12",
			"libnvrtc.so.11.2", "/opt/cuda-13.0/lib64/libnvrtc.so.11.2", "/usr/local/cuda/lib64/libnvrtc.so.11.2",
			"libnvrtc.so", "/opt/cuda-13.0/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so",
		}},
		{"CUDA_HOME is the default", env("CUDA_HOME", "/usr/local/cuda/"), []string{
			"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13",
			"libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.12",
			"libnvrtc.so.11.2", "/usr/local/cuda/lib64/libnvrtc.so.11.2",
			"libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so",
		}},
		{"KTUNE_NVRTC overrides", env("KTUNE_NVRTC", "/x/libnvrtc.so.13", "CUDA_HOME", "/opt/cuda"), []string{
			"/x/libnvrtc.so.13",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &fakeOpener{}
			_, err := openNVRTC(o, tt.env)
			var le *LibraryError
			if !errors.As(err, &le) {
				t.Fatalf("got %v (%T), want *LibraryError", err, err)
			}
			if !slices.Equal(o.tried, tt.want) {
				t.Errorf("tried\n  %q\nwant\n  %q", o.tried, tt.want)
			}
			if len(le.Tried) != len(tt.want) {
				t.Fatalf("error lists %d attempts, want %d", len(le.Tried), len(tt.want))
			}
			for i, p := range tt.want {
				if !strings.HasPrefix(le.Tried[i], p+": ") || !strings.Contains(le.Tried[i], "No such file") {
					t.Errorf("attempt %d = %q, want %q with its dlerror text", i, le.Tried[i], p)
				}
			}
		})
	}
}

func TestNVRTCStopsAtFirstLoadable(t *testing.T) {
	lib := &fakeLib{missing: map[string]bool{"nvrtcGetCUBIN": true}}
	o := &fakeOpener{loads: map[string]library{
		"/opt/cuda/lib64/libnvrtc.so.12": lib,
		"libnvrtc.so":                    &fakeLib{}, // later in the order: must not be reached
	}}
	_, err := openNVRTC(o, env("CUDA_HOME", "/opt/cuda"))
	want := []string{
		"libnvrtc.so.13", "/opt/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13",
		"libnvrtc.so.12", "/opt/cuda/lib64/libnvrtc.so.12",
	}
	if !slices.Equal(o.tried, want) {
		t.Errorf("tried %q, want %q", o.tried, want)
	}
	var se *SymbolError
	if !errors.As(err, &se) {
		t.Fatalf("got %v (%T), want *SymbolError for the library lacking nvrtcGetCUBIN", err, err)
	}
	if se.Lib != "/opt/cuda/lib64/libnvrtc.so.12" || !slices.Equal(se.Names, []string{"nvrtcGetCUBIN"}) {
		t.Errorf("SymbolError = %+v, want nvrtcGetCUBIN missing from /opt/cuda/lib64/libnvrtc.so.12", se)
	}
}

func TestDriverSymbolFallback(t *testing.T) {
	// The _v2 event timer is absent (a driver older than CUDA 12.8), so
	// the unversioned one must be used; cuGraphLaunch is absent outright.
	lib := &fakeLib{missing: map[string]bool{"cuEventElapsedTime_v2": true, "cuGraphLaunch": true}}
	o := &fakeOpener{loads: map[string]library{"libcuda.so.1": lib}}
	_, err := openDriver(o)
	var se *SymbolError
	if !errors.As(err, &se) {
		t.Fatalf("got %v (%T), want *SymbolError", err, err)
	}
	if !slices.Equal(se.Names, []string{"cuGraphLaunch"}) {
		t.Errorf("missing %q, want cuGraphLaunch (cuEventElapsedTime should have been accepted)", se.Names)
	}
	i := slices.Index(lib.looked, "cuEventElapsedTime_v2")
	if i < 0 || i+1 >= len(lib.looked) || lib.looked[i+1] != "cuEventElapsedTime" {
		t.Errorf("lookups %q: want cuEventElapsedTime_v2 then cuEventElapsedTime", lib.looked)
	}
	for _, s := range lib.looked {
		if s == "cuMemAlloc" || s == "cuMemFree" || s == "cuMemGetInfo" {
			t.Errorf("looked up the pre-3.2 ABI symbol %s; cuda.h maps it to the _v2 symbol", s)
		}
	}
}

func TestDriverSymbolMissingBothVersions(t *testing.T) {
	lib := &fakeLib{missing: map[string]bool{"cuEventElapsedTime_v2": true, "cuEventElapsedTime": true}}
	_, err := openDriver(&fakeOpener{loads: map[string]library{"libcuda.so.1": lib}})
	var se *SymbolError
	if !errors.As(err, &se) || !slices.Equal(se.Names, []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}) {
		t.Fatalf("got %v, want a SymbolError naming both versions", err)
	}
	if !strings.Contains(err.Error(), "undefined symbol: cuEventElapsedTime") {
		t.Errorf("message %q drops the loader's text", err)
	}
}

// TestLoadErrorMessages pins the full text users see.
func TestLoadErrorMessages(t *testing.T) {
	var b strings.Builder
	_, err := openDriver(&fakeOpener{})
	fmt.Fprintf(&b, "# no driver\n%v\n\n", err)
	_, err = openNVRTC(&fakeOpener{}, env("CUDA_HOME", "/opt/cuda"))
	fmt.Fprintf(&b, "# no NVRTC, CUDA_HOME=/opt/cuda\n%v\n\n", err)
	_, err = openNVRTC(&fakeOpener{}, env("KTUNE_NVRTC", "/home/me/libnvrtc.so.13"))
	fmt.Fprintf(&b, "# KTUNE_NVRTC names a missing file\n%v\n\n", err)
	lib := &fakeLib{missing: map[string]bool{"cuGraphInstantiateWithFlags": true}}
	_, err = openDriver(&fakeOpener{loads: map[string]library{"libcuda.so.1": lib}})
	fmt.Fprintf(&b, "# old driver\n%v\n", err)
	golden.Check(t, filepath.Join("testdata", "load_errors.golden"), []byte(b.String()))
}

func TestAttemptText(t *testing.T) {
	tests := []struct{ path, dlerr, want string }{
		{"libcuda.so.1", "libcuda.so.1: cannot open shared object file: No such file or directory\n",
			"libcuda.so.1: cannot open shared object file: No such file or directory"},
		{"/x/libnvrtc.so.13", "libnvrtc-builtins.so.13.0: cannot open shared object file",
			"/x/libnvrtc.so.13: libnvrtc-builtins.so.13.0: cannot open shared object file"},
	}
	for _, tt := range tests {
		if got := attempt(tt.path, errors.New(tt.dlerr)); got != tt.want {
			t.Errorf("attempt(%q, %q) = %q, want %q", tt.path, tt.dlerr, got, tt.want)
		}
	}
}

// resultLib is a fakeLib whose cuInit really runs: purego turns a Go
// function into a C function pointer, so openDriver calls it as it would
// the driver's. cuGetErrorName and cuGetErrorString fail, as a driver
// that knows no text would, so the message comes from resultText.
func resultLib(t *testing.T, init Result) *callLib {
	t.Helper()
	return &callLib{fns: map[string]uintptr{
		"cuInit":           purego.NewCallback(func(flags uint32) int32 { return int32(init) }),
		"cuGetErrorName":   purego.NewCallback(func(r int32, p uintptr) int32 { return 1 }),
		"cuGetErrorString": purego.NewCallback(func(r int32, p uintptr) int32 { return 1 }),
	}}
}

// A callLib resolves the names in fns to real functions and every other
// symbol to a dummy that no test calls.
type callLib struct{ fns map[string]uintptr }

func (l *callLib) lookup(sym string) (uintptr, error) {
	if f, ok := l.fns[sym]; ok {
		return f, nil
	}
	return 0x1000, nil
}

// TestNoUsableDevice holds the one decision every GPU test's skip rests
// on: a machine with the driver's library and no GPU (cuInit answers
// CUDA_ERROR_NO_DEVICE, as Debian's libcuda1 does on a build server)
// skips like a machine without the library, and an error that is not
// about the device's absence does not.
func TestNoUsableDevice(t *testing.T) {
	_, missing := openDriver(&fakeOpener{})
	noDevice := func(r Result) error {
		_, err := openDriver(&fakeOpener{loads: map[string]library{"libcuda.so.1": resultLib(t, r)}})
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"library missing", missing, true},
		{"NVRTC missing", fmt.Errorf("opening NVRTC: %w", &LibraryError{Lib: "libnvrtc.so"}), true},
		{"cuInit: no device", noDevice(ErrNoDevice), true},
		{"cuInit: stub library", noDevice(ErrStubLibrary), true},
		{"cuInit: insufficient driver", noDevice(ErrInsufficientDriver), true},
		{"cuInit: driver mismatch", noDevice(ErrSystemDriverMismatch), true},
		{"no device for this build", fmt.Errorf("device 0: sm_120 is newer than NVRTC 11.8: %w", ErrNoUsableDevice), true},
		{"cuInit: unknown error", noDevice(ErrUnknown), false},
		{"old driver", &SymbolError{Lib: "libcuda.so.1", Names: []string{"cuGraphLaunch"}}, false},
		{"out of memory", &Error{Call: "cuMemAlloc", Code: ErrOutOfMemory}, false},
		{"kernel fault", &Error{Call: "cuStreamSynchronize", Code: ErrIllegalAddress}, false},
		{"no error", nil, false},
	} {
		if got := NoUsableDevice(c.err); got != c.want {
			t.Errorf("%s: NoUsableDevice(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	if err := noDevice(ErrNoDevice); err == nil || !strings.Contains(err.Error(), "cuInit: CUDA_ERROR_NO_DEVICE (100)") {
		t.Errorf("the fake driver's cuInit error reads %q, want the driver's call and result", err)
	}
}
