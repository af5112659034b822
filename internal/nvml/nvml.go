package nvml

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// libName is NVML's SONAME, installed with the driver (the unversioned
// libnvidia-ml.so belongs to the development package).
const libName = "libnvidia-ml.so.1"

// ErrNoNVML is wrapped by every error that means NVML cannot be used on
// this machine: the library is missing or lacks a function ktune needs.
var ErrNoNVML = errors.New("NVML is not available")

// A LibraryError reports that libnvidia-ml could not be loaded.
type LibraryError struct {
	// Tried lists each path given to dlopen with the loader's error text.
	Tried []string
}

func (e *LibraryError) Error() string {
	s := libName + " not found"
	if len(e.Tried) > 0 {
		s += " (tried: " + strings.Join(e.Tried, "; ") + ")"
	}
	return s + "; it comes with the NVIDIA driver"
}

func (e *LibraryError) Unwrap() error { return ErrNoNVML }

// A SymbolError reports a library that loaded but lacks a function ktune
// calls (an NVML older than the energy counter, which came with Volta's).
type SymbolError struct {
	Name string
	Err  error
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("%s has no %s (%v)", libName, e.Name, e.Err)
}

// Unwrap makes a SymbolError both ErrNoNVML and the loader's error.
func (e *SymbolError) Unwrap() []error { return []error{ErrNoNVML, e.Err} }

// Return is an nvmlReturn_t.
type Return int32

// The nvmlReturn_t values ktune tells apart (nvml.h).
const (
	Success         Return = 0
	Uninitialized   Return = 1
	InvalidArgument Return = 2
	NotSupported    Return = 3
	NoPermission    Return = 4
	NotFound        Return = 6
	GPUIsLost       Return = 15
)

// ErrNotSupported is what an *Error with NotSupported matches (errors.Is):
// the board has no such counter, which is not a failure of the run.
var ErrNotSupported = errors.New("not supported by this device")

// An Error is a failed NVML call.
type Error struct {
	Call string
	Code Return
	Text string // nvmlErrorString's, empty if it gave none
}

func (e *Error) Error() string {
	if e.Text != "" {
		return fmt.Sprintf("%s: %s (nvmlReturn %d)", e.Call, e.Text, e.Code)
	}
	return fmt.Sprintf("%s: nvmlReturn %d", e.Call, e.Code)
}

// Is makes errors.Is(err, ErrNotSupported) hold for NVML_ERROR_NOT_SUPPORTED.
func (e *Error) Is(target error) bool { return target == ErrNotSupported && e.Code == NotSupported }

// library and opener stand in for dlopen and dlsym, so that tests can load
// a fake NVML whose functions are Go callbacks.
type library interface {
	lookup(symbol string) (uintptr, error)
}

type opener interface {
	open(path string) (library, error)
}

type dlopener struct{}

// open holds its OS thread: purego reads dlerror in a call of its own and
// dlerror's text is per thread.
func (dlopener) open(path string) (library, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, err
	}
	return dlhandle(h), nil
}

type dlhandle uintptr

func (h dlhandle) lookup(symbol string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlsym(uintptr(h), symbol)
}

// NVML is the loaded library with nvmlInit_v2 done. Obtain it from Open.
type NVML struct {
	nvmlInit                            func() int32
	nvmlErrorString                     func(r int32) string
	nvmlDeviceGetHandleByUUID           func(uuid string, dev *uintptr) int32
	nvmlDeviceGetTotalEnergyConsumption func(dev uintptr, mj *uint64) int32
	nvmlDeviceGetPowerUsage             func(dev uintptr, mw *uint32) int32
}

func (n *NVML) bindings() []struct {
	fn   any
	name string
} {
	return []struct {
		fn   any
		name string
	}{
		{&n.nvmlInit, "nvmlInit_v2"},
		{&n.nvmlErrorString, "nvmlErrorString"},
		{&n.nvmlDeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID"},
		{&n.nvmlDeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption"},
		{&n.nvmlDeviceGetPowerUsage, "nvmlDeviceGetPowerUsage"},
	}
}

// cache makes Open idempotent; a failure is not remembered, so a later
// call tries again.
var cache struct {
	mu sync.Mutex
	n  *NVML
}

// Open loads libnvidia-ml.so.1 and calls nvmlInit_v2, once per process.
// Without the library the error wraps ErrNoNVML.
func Open() (*NVML, error) { return openOnce(dlopener{}) }

func openOnce(o opener) (*NVML, error) {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cache.n != nil {
		return cache.n, nil
	}
	n, err := open(o)
	if err != nil {
		return nil, err
	}
	cache.n = n
	return n, nil
}

func open(o opener) (*NVML, error) {
	lib, err := o.open(libName)
	if err != nil {
		return nil, &LibraryError{Tried: []string{attempt(libName, err)}}
	}
	n := &NVML{}
	bs := n.bindings()
	addrs := make([]uintptr, len(bs))
	for i, b := range bs {
		a, err := lib.lookup(b.name)
		if err == nil && a == 0 {
			err = errors.New("null address")
		}
		if err != nil {
			return nil, &SymbolError{Name: b.name, Err: err}
		}
		addrs[i] = a
	}
	for i, b := range bs {
		purego.RegisterFunc(b.fn, addrs[i])
	}
	if err := n.check("nvmlInit_v2", n.nvmlInit()); err != nil {
		return nil, fmt.Errorf("initialising NVML: %w", err)
	}
	return n, nil
}

// attempt is "path: reason" for one failed dlopen, without repeating a
// path that the loader's text already starts with.
func attempt(path string, err error) string {
	text := strings.TrimSpace(err.Error())
	if strings.HasPrefix(text, path+":") {
		return text
	}
	return path + ": " + text
}

func (n *NVML) check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Code: Return(r)}
	e.Text = n.nvmlErrorString(r)
	return e
}

// A Device is one board's NVML handle.
type Device struct {
	n *NVML
	h uintptr
}

// DeviceByUUID returns the board with the given UUID, in the form
// nvidia-smi prints and cuda.Device.UUID returns ("GPU-…"): the CUDA
// ordinal and NVML's index need not agree, the UUID does.
func (n *NVML) DeviceByUUID(uuid string) (*Device, error) {
	var h uintptr
	if err := n.check("nvmlDeviceGetHandleByUUID", n.nvmlDeviceGetHandleByUUID(uuid, &h)); err != nil {
		return nil, fmt.Errorf("finding %s: %w", uuid, err)
	}
	return &Device{n: n, h: h}, nil
}

// EnergyMJ is the board's total energy since the driver loaded, in mJ.
func (d *Device) EnergyMJ() (uint64, error) {
	var mj uint64
	if err := d.n.check("nvmlDeviceGetTotalEnergyConsumption", d.n.nvmlDeviceGetTotalEnergyConsumption(d.h, &mj)); err != nil {
		return 0, err
	}
	return mj, nil
}

// PowerMW is the board's power draw in mW (averaged over a second on
// Ampere and newer but GA100).
func (d *Device) PowerMW() (uint32, error) {
	var mw uint32
	if err := d.n.check("nvmlDeviceGetPowerUsage", d.n.nvmlDeviceGetPowerUsage(d.h, &mw)); err != nil {
		return 0, err
	}
	return mw, nil
}
