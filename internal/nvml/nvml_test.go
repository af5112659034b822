package nvml

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// fakeOpener stands in for dlopen: it loads lib under libName and fails
// every other path, or every path when lib is nil.
type fakeOpener struct {
	lib   library
	tried []string
}

func (o *fakeOpener) open(path string) (library, error) {
	o.tried = append(o.tried, path)
	if o.lib == nil || path != libName {
		return nil, errors.New(path + ": cannot open shared object file: No such file or directory")
	}
	return o.lib, nil
}

// fakeBoard is a fake NVML's one board: its functions are Go callbacks
// that purego turns into C function pointers, so the code under test
// calls them exactly as it calls the real library.
type fakeBoard struct {
	uuid     string
	energyMJ uint64
	powerMW  uint32
	initRet  Return
	energy   Return // what the energy call answers
	inits    int
	missing  string // a symbol the library lacks
}

func cString(p *byte) string {
	var b []byte
	for i := 0; ; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

var errText = []byte("Not Supported\x00")

func (f *fakeBoard) lib() library {
	fns := map[string]uintptr{
		"nvmlInit_v2": purego.NewCallback(func() int32 { f.inits++; return int32(f.initRet) }),
		"nvmlErrorString": purego.NewCallback(func(r int32) *byte {
			return &errText[0]
		}),
		"nvmlDeviceGetHandleByUUID": purego.NewCallback(func(uuid *byte, dev *uintptr) int32 {
			if cString(uuid) != f.uuid {
				return int32(NotFound)
			}
			*dev = 0x51
			return 0
		}),
		"nvmlDeviceGetTotalEnergyConsumption": purego.NewCallback(func(dev uintptr, mj *uint64) int32 {
			if dev != 0x51 {
				return int32(InvalidArgument)
			}
			if f.energy != Success {
				return int32(f.energy)
			}
			*mj = f.energyMJ
			return 0
		}),
		"nvmlDeviceGetPowerUsage": purego.NewCallback(func(dev uintptr, mw *uint32) int32 {
			*mw = f.powerMW
			return 0
		}),
	}
	delete(fns, f.missing)
	return mapLib(fns)
}

type mapLib map[string]uintptr

func (l mapLib) lookup(sym string) (uintptr, error) {
	if a, ok := l[sym]; ok {
		return a, nil
	}
	return 0, errors.New("undefined symbol: " + sym)
}

func TestOpenWithoutLibrary(t *testing.T) {
	o := &fakeOpener{}
	_, err := open(o)
	if !errors.Is(err, ErrNoNVML) {
		t.Fatalf("open without the library: %v, want ErrNoNVML", err)
	}
	var le *LibraryError
	if !errors.As(err, &le) || len(le.Tried) != 1 || !strings.Contains(err.Error(), "No such file") {
		t.Errorf("the error %q should name the path tried and the loader's reason", err)
	}
}

func TestOpenMissingSymbol(t *testing.T) {
	f := &fakeBoard{missing: "nvmlDeviceGetTotalEnergyConsumption"}
	_, err := open(&fakeOpener{lib: f.lib()})
	var se *SymbolError
	if !errors.Is(err, ErrNoNVML) || !errors.As(err, &se) || se.Name != f.missing {
		t.Fatalf("open without %s: %v, want a *SymbolError wrapping ErrNoNVML", f.missing, err)
	}
	if f.inits != 0 {
		t.Errorf("nvmlInit_v2 ran %d times on a library that lacks a function, want 0", f.inits)
	}
}

func TestOpenInitFails(t *testing.T) {
	f := &fakeBoard{initRet: NoPermission}
	_, err := open(&fakeOpener{lib: f.lib()})
	var ne *Error
	if !errors.As(err, &ne) || ne.Code != NoPermission || ne.Call != "nvmlInit_v2" {
		t.Fatalf("open with a failing init: %v, want the init's *Error", err)
	}
	if errors.Is(err, ErrNoNVML) {
		t.Errorf("a library that loads and refuses to initialise is not a missing one: %v", err)
	}
}

func TestReadings(t *testing.T) {
	f := &fakeBoard{uuid: "GPU-0123", energyMJ: 123456789, powerMW: 351250}
	n, err := open(&fakeOpener{lib: f.lib()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.DeviceByUUID("GPU-9999"); err == nil {
		t.Fatal("a UUID NVML does not know found a device")
	}
	d, err := n.DeviceByUUID(f.uuid)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := d.EnergyMJ(); err != nil || e != f.energyMJ {
		t.Errorf("EnergyMJ = %d, %v; want %d", e, err, f.energyMJ)
	}
	f.energyMJ += 1000
	if e, _ := d.EnergyMJ(); e != f.energyMJ {
		t.Errorf("a second read gave %d, want the counter's %d", e, f.energyMJ)
	}
	if p, err := d.PowerMW(); err != nil || p != f.powerMW {
		t.Errorf("PowerMW = %d, %v; want %d", p, err, f.powerMW)
	}
	f.energy = NotSupported
	_, err = d.EnergyMJ()
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "Not Supported") {
		t.Errorf("a board without the counter: %v, want ErrNotSupported with NVML's text", err)
	}
	if f.inits != 1 {
		t.Errorf("nvmlInit_v2 ran %d times, want 1", f.inits)
	}
}

func TestOpenOnce(t *testing.T) {
	t.Cleanup(func() { cache.n = nil })
	cache.n = nil
	if _, err := openOnce(&fakeOpener{}); !errors.Is(err, ErrNoNVML) {
		t.Fatalf("first open without the library: %v", err)
	}
	f := &fakeBoard{}
	o := &fakeOpener{lib: f.lib()}
	a, err := openOnce(o)
	if err != nil {
		t.Fatalf("a failure was remembered: %v", err)
	}
	b, err := openOnce(o)
	if err != nil || a != b {
		t.Fatalf("second open gave %p, %v; want the first's %p", b, err, a)
	}
	if f.inits != 1 || len(o.tried) != 1 {
		t.Errorf("two opens loaded the library %d times and initialised it %d times, want 1 and 1", len(o.tried), f.inits)
	}
}
