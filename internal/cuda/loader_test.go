package cuda

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/golden"
)

// fakeOpener stands in for dlopen: it fails every path with the dlerror text
// a missing file produces, except those listed in loads.
type fakeOpener struct {
	loads map[string]*fakeLib
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
	o := &fakeOpener{loads: map[string]*fakeLib{
		"/opt/cuda/lib64/libnvrtc.so.12": lib,
		"libnvrtc.so":                    {}, // later in the order: must not be reached
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
	o := &fakeOpener{loads: map[string]*fakeLib{"libcuda.so.1": lib}}
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
	_, err := openDriver(&fakeOpener{loads: map[string]*fakeLib{"libcuda.so.1": lib}})
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
	_, err = openDriver(&fakeOpener{loads: map[string]*fakeLib{"libcuda.so.1": lib}})
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
