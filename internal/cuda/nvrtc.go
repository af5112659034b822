package cuda

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// nvrtcNames are the NVRTC sonames ktune accepts, newest first: CUDA 13's,
// CUDA 12's, CUDA 11's (every 11.x NVRTC from 11.2 on carries the soname
// libnvrtc.so.11.2; 11.8 is the first that compiles for sm_90, and
// ArchSupport says so for an older one), then the development symlink. A machine with
// several toolkits thus compiles with its newest.
var nvrtcNames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// defaultCUDAHome is where the CUDA toolkit installs itself by default.
const defaultCUDAHome = "/usr/local/cuda"

// An NVRTC is the loaded runtime compiler. Obtain it from OpenNVRTC.
type NVRTC struct {
	path string

	nvrtcVersion           func(major, minor *int32) int32
	nvrtcGetErrorString    func(r int32) string
	nvrtcCreateProgram     func(prog *uintptr, src, name uintptr, numHeaders int32, headers, includeNames uintptr) int32
	nvrtcCompileProgram    func(prog uintptr, numOptions int32, options uintptr) int32
	nvrtcGetProgramLogSize func(prog uintptr, n *uintptr) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcGetCUBINSize      func(prog uintptr, n *uintptr) int32
	nvrtcGetCUBIN          func(prog uintptr, cubin *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
	nvrtcAddNameExpression func(prog uintptr, expr uintptr) int32
	nvrtcGetLoweredName    func(prog uintptr, expr uintptr, lowered **byte) int32
	nvrtcGetNumSupported   func(n *int32) int32
	nvrtcGetSupportedArchs func(archs *int32) int32
}

func (n *NVRTC) bindings() []binding {
	return []binding{
		{&n.nvrtcVersion, names("nvrtcVersion")},
		{&n.nvrtcGetErrorString, names("nvrtcGetErrorString")},
		{&n.nvrtcCreateProgram, names("nvrtcCreateProgram")},
		{&n.nvrtcCompileProgram, names("nvrtcCompileProgram")},
		{&n.nvrtcGetProgramLogSize, names("nvrtcGetProgramLogSize")},
		{&n.nvrtcGetProgramLog, names("nvrtcGetProgramLog")},
		{&n.nvrtcGetCUBINSize, names("nvrtcGetCUBINSize")},
		{&n.nvrtcGetCUBIN, names("nvrtcGetCUBIN")},
		{&n.nvrtcDestroyProgram, names("nvrtcDestroyProgram")},
		{&n.nvrtcAddNameExpression, names("nvrtcAddNameExpression")},
		{&n.nvrtcGetLoweredName, names("nvrtcGetLoweredName")},
		// Since NVRTC 11.2, the oldest whose soname ktune looks for.
		{&n.nvrtcGetNumSupported, names("nvrtcGetNumSupportedArchs")},
		{&n.nvrtcGetSupportedArchs, names("nvrtcGetSupportedArchs")},
	}
}

var nvrtcCache struct {
	mu sync.Mutex
	n  *NVRTC
}

// OpenNVRTC loads NVRTC, once per process like Open. If KTUNE_NVRTC is set it
// is the full path of the library to load and nothing else is tried.
// Otherwise each of libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.11.2 and
// libnvrtc.so is looked for, in that order, first through the loader's search path
// (LD_LIBRARY_PATH, ld.so.cache), then in $CUDA_HOME/lib64 and finally in
// /usr/local/cuda/lib64. A failure is a *LibraryError listing every attempt.
func OpenNVRTC() (*NVRTC, error) {
	nvrtcCache.mu.Lock()
	defer nvrtcCache.mu.Unlock()
	if nvrtcCache.n != nil {
		return nvrtcCache.n, nil
	}
	n, err := openNVRTC(dlopener{}, osGetenv)
	if err != nil {
		return nil, err
	}
	nvrtcCache.n = n
	return n, nil
}

// nvrtcCandidates lists what to give dlopen, in order.
func nvrtcCandidates(getenv func(string) string) []string {
	if p := getenv("KTUNE_NVRTC"); p != "" {
		return []string{p}
	}
	dirs := []string{""}
	if h := getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"))
	}
	if def := filepath.Join(defaultCUDAHome, "lib64"); dirs[len(dirs)-1] != def {
		dirs = append(dirs, def)
	}
	var out []string
	for _, n := range nvrtcNames {
		for _, d := range dirs {
			if d == "" {
				out = append(out, n)
			} else {
				out = append(out, filepath.Join(d, n))
			}
		}
	}
	return out
}

func openNVRTC(o opener, getenv func(string) string) (*NVRTC, error) {
	lib, path, tried := tryOpen(o, nvrtcCandidates(getenv))
	if lib == nil {
		e := &LibraryError{
			Lib:   "libnvrtc.so.13 (or .so.12, .so.11.2)",
			Tried: tried,
			Hint:  "install the CUDA toolkit's NVRTC (cuda-nvrtc-13-0; for ktune check, Debian's libnvrtc11.2 from non-free is enough) or set KTUNE_NVRTC=/path/to/libnvrtc.so.13 or CUDA_HOME",
		}
		if p := getenv("KTUNE_NVRTC"); p != "" {
			e.Lib = p
			e.Hint = "KTUNE_NVRTC must be the full path of an existing libnvrtc.so.13 (or .so.12, .so.11.2); unset it to search the usual places"
		}
		return nil, e
	}
	n := &NVRTC{path: path}
	if err := bind(lib, path, n.bindings()); err != nil {
		return nil, fmt.Errorf("loading NVRTC: %w", err)
	}
	return n, nil
}

// Path returns the name or path NVRTC was loaded from.
func (n *NVRTC) Path() string { return n.path }

// Version reports NVRTC's CUDA version, e.g. 13.0.
func (n *NVRTC) Version() (major, minor int, err error) {
	var ma, mi int32
	if err := n.check("nvrtcVersion", n.nvrtcVersion(&ma, &mi)); err != nil {
		return 0, 0, err
	}
	return int(ma), int(mi), nil
}

// SupportedArchs lists the SM numbers NVRTC can compile for (90 for
// sm_90), ascending. The architecture-specific (sm_90a) and family
// (sm_100f) forms of a number are not listed apart: ArchSupport decides
// those from the version.
func (n *NVRTC) SupportedArchs() ([]int, error) {
	var c int32
	if err := n.check("nvrtcGetNumSupportedArchs", n.nvrtcGetNumSupported(&c)); err != nil {
		return nil, err
	}
	if c <= 0 {
		return nil, nil
	}
	a := make([]int32, c)
	if err := n.check("nvrtcGetSupportedArchs", n.nvrtcGetSupportedArchs(&a[0])); err != nil {
		return nil, err
	}
	out := make([]int, c)
	for i, v := range a {
		out[i] = int(v)
	}
	return out, nil
}

// An NVRTCError is an NVRTC call that failed.
type NVRTCError struct {
	// Call is the NVRTC function, e.g. "nvrtcGetCUBIN".
	Call string
	// Code is the nvrtcResult it returned.
	Code int
	// Msg is nvrtcGetErrorString's text, e.g. "NVRTC_ERROR_COMPILATION".
	Msg string
}

func (e *NVRTCError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("%s: NVRTC error %d", e.Call, e.Code)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Msg, e.Code)
}

func (n *NVRTC) check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &NVRTCError{Call: call, Code: int(r)}
	if n.nvrtcGetErrorString != nil {
		e.Msg = n.nvrtcGetErrorString(r)
	}
	return e
}

// A CompileError is a program NVRTC rejected.
type CompileError struct {
	// Name is the program's name as given to Compile (it prefixes the
	// diagnostics in Log).
	Name string
	// Log is NVRTC's complete diagnostic output.
	Log string
	// Err is the failing call's error.
	Err error
}

func (e *CompileError) Error() string {
	log := strings.TrimSpace(e.Log)
	if log == "" {
		return fmt.Sprintf("compiling %s: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("compiling %s: %v:\n%s", e.Name, e.Err, log)
}

func (e *CompileError) Unwrap() error { return e.Err }

// Compile compiles the CUDA C++ source src, named name in diagnostics, to a
// CUBIN. headers maps include names to their contents, so src may
// #include "x.cuh" without any file on disk. opts are NVRTC options and must
// name a real architecture, e.g. -arch=sm_90: NVRTC makes a CUBIN only for
// sm_XX, never for a virtual compute_XX. The log is returned in every case,
// since warnings matter too; a rejected program gives a *CompileError.
func (n *NVRTC) Compile(src, name string, headers map[string]string, opts []string) (cubin []byte, log string, err error) {
	cubin, log, _, err = n.CompileNamed(src, name, headers, opts, nil)
	return cubin, log, err
}

// CompileNamed is Compile that also resolves C++ name expressions: each of
// exprs names a __global__ function as C++ would, a template
// instantiation included (partial<__half, 4>), and lowered maps it to the
// symbol NVRTC gave it in the CUBIN (its mangled name), which is what the
// driver looks a function up by. Naming an instantiation also makes NVRTC
// emit it, so a template needs no explicit instantiation in the source.
func (n *NVRTC) CompileNamed(src, name string, headers map[string]string, opts, exprs []string) (cubin []byte, log string, lowered map[string]string, err error) {
	incNames := make([]string, 0, len(headers))
	for k := range headers {
		incNames = append(incNames, k)
	}
	sort.Strings(incNames) // a stable order keeps compiles reproducible
	incBodies := make([]string, len(incNames))
	for i, k := range incNames {
		incBodies[i] = headers[k]
	}

	// Source, names and options go to C as NUL-terminated strings in
	// arrays of pointers, all outside the Go heap.
	arena, err := newOffHeap(cstringsSize([]string{src, name}, incNames, incBodies, opts, exprs))
	if err != nil {
		return nil, "", nil, fmt.Errorf("compiling %s: %w", name, err)
	}
	defer arena.free()
	cstrs := func(ss []string) uintptr {
		ps := make([]uintptr, len(ss))
		for i, s := range ss {
			ps[i] = arena.cstring(s)
		}
		return arena.ptrArray(ps)
	}
	srcP, nameP := arena.cstring(src), arena.cstring(name)
	bodiesP, namesP, optsP := cstrs(incBodies), cstrs(incNames), cstrs(opts)

	var prog uintptr
	if err := n.check("nvrtcCreateProgram", n.nvrtcCreateProgram(&prog, srcP, nameP, int32(len(incNames)), bodiesP, namesP)); err != nil {
		return nil, "", nil, fmt.Errorf("compiling %s: %w", name, err)
	}
	defer n.nvrtcDestroyProgram(&prog)
	// The expressions stay in the arena until the lowered names are read:
	// NVRTC matches them by content, but a copy per call keeps it simple.
	exprP := make([]uintptr, len(exprs))
	for i, e := range exprs {
		exprP[i] = arena.cstring(e)
		if err := n.check("nvrtcAddNameExpression", n.nvrtcAddNameExpression(prog, exprP[i])); err != nil {
			return nil, "", nil, fmt.Errorf("compiling %s: adding the name expression %q: %w", name, e, err)
		}
	}

	cerr := n.check("nvrtcCompileProgram", n.nvrtcCompileProgram(prog, int32(len(opts)), optsP))
	runtime.KeepAlive(arena)
	onSignalStack() // NVRTC's first compile puts SIGINT's handler back without the flag (sigstack_linux.go)
	log, lerr := n.programLog(prog)
	if cerr != nil {
		return nil, log, nil, &CompileError{Name: name, Log: log, Err: cerr}
	}
	if lerr != nil {
		return nil, log, nil, fmt.Errorf("compiling %s: %w", name, lerr)
	}
	if len(exprs) > 0 {
		lowered = make(map[string]string, len(exprs))
		for i, e := range exprs {
			var p *byte
			if err := n.check("nvrtcGetLoweredName", n.nvrtcGetLoweredName(prog, exprP[i], &p)); err != nil {
				return nil, log, nil, fmt.Errorf("compiling %s: resolving the name expression %q: %w", name, e, err)
			}
			lowered[e] = goString(p)
		}
		runtime.KeepAlive(arena)
	}

	var size uintptr
	if err := n.check("nvrtcGetCUBINSize", n.nvrtcGetCUBINSize(prog, &size)); err != nil || size == 0 {
		if err == nil {
			err = fmt.Errorf("nvrtcGetCUBINSize: empty CUBIN")
		}
		return nil, log, nil, fmt.Errorf("compiling %s: no CUBIN (pass -arch=sm_XX, a real architecture, among the options %q): %w", name, opts, err)
	}
	cubin = make([]byte, size)
	if err := n.check("nvrtcGetCUBIN", n.nvrtcGetCUBIN(prog, &cubin[0])); err != nil {
		return nil, log, nil, fmt.Errorf("compiling %s: %w", name, err)
	}
	return cubin, log, lowered, nil
}

// programLog fetches the compile log without its terminating NUL.
func (n *NVRTC) programLog(prog uintptr) (string, error) {
	var size uintptr
	if err := n.check("nvrtcGetProgramLogSize", n.nvrtcGetProgramLogSize(prog, &size)); err != nil {
		return "", err
	}
	if size <= 1 {
		return "", nil
	}
	buf := make([]byte, size)
	if err := n.check("nvrtcGetProgramLog", n.nvrtcGetProgramLog(prog, &buf[0])); err != nil {
		return "", err
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}
