package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// A library is an opened shared object. It is an interface so that tests can
// stand in for dlopen and exercise the failure paths without a GPU.
type library interface {
	// lookup returns the address of the named symbol.
	lookup(symbol string) (uintptr, error)
}

// An opener opens shared objects by name or path, the way dlopen does.
type opener interface {
	open(path string) (library, error)
}

// dlopener opens libraries with the system's dynamic loader.
type dlopener struct{}

// RTLD_GLOBAL keeps libcuda's symbols visible to libraries it loads lazily
// itself (the PTX JIT, libnvidia-ptxjitcompiler), as the CUDA runtime does.
const dlFlags = purego.RTLD_NOW | purego.RTLD_GLOBAL

// open holds its OS thread: purego reads dlerror after dlopen in a call of
// its own, and dlerror's text is per thread, so a goroutine moved between
// the two reads another thread's (none: an empty reason).
func (dlopener) open(path string) (library, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(path, dlFlags)
	if err != nil {
		return nil, err
	}
	onSignalStack() // handlers a library's constructors installed (sigstack_linux.go)
	return dlhandle(h), nil
}

type dlhandle uintptr

// lookup holds its OS thread for the same reason as open.
func (h dlhandle) lookup(symbol string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlsym(uintptr(h), symbol)
}

// A LibraryError reports a shared library that could not be loaded.
type LibraryError struct {
	// Lib is the library that was looked for, e.g. "libcuda.so.1".
	Lib string
	// Tried lists each name or path given to dlopen, followed by ": " and
	// the loader's error text for it, in the order they were tried.
	Tried []string
	// Hint says what to install or set to fix it.
	Hint string
}

func (e *LibraryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s not found", e.Lib)
	if len(e.Tried) > 0 {
		fmt.Fprintf(&b, " (tried: %s)", strings.Join(e.Tried, "; "))
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	return b.String()
}

// A SymbolError reports a library that loaded but lacks a function ktune
// needs, which means it is older than ktune supports.
type SymbolError struct {
	// Lib is the library that was searched.
	Lib string
	// Names are the symbol names tried, newest ABI version first.
	Names []string
	// Err is the loader's error for the last name tried.
	Err error
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("%s has no %s (%v); the library is older than ktune supports (CUDA 12.0 or newer is needed)",
		e.Lib, strings.Join(e.Names, " or "), e.Err)
}

func (e *SymbolError) Unwrap() error { return e.Err }

// tryOpen opens the first of paths that loads, recording each failure.
func tryOpen(o opener, paths []string) (lib library, path string, tried []string) {
	for _, p := range paths {
		l, err := o.open(p)
		if err == nil {
			return l, p, tried
		}
		tried = append(tried, attempt(p, err))
	}
	return nil, "", tried
}

// attempt describes one failed dlopen as "path: reason". The dlerror text is
// kept whole, since it says why (no such file, wrong ELF class, a missing
// dependency); glibc already starts it with the path, which is not repeated.
func attempt(path string, err error) string {
	text := strings.TrimSpace(err.Error())
	if strings.HasPrefix(text, path+":") {
		return text
	}
	return path + ": " + text
}

// A binding ties a Go function variable to the C symbol that implements it.
type binding struct {
	fn    any      // pointer to a func variable
	names []string // candidate symbol names, preferred first
}

// bind resolves every binding before registering any, so a library that
// lacks a symbol is reported as an error and never half-bound. Versioned
// names (cuMemAlloc_v2 …) come first because the unversioned symbols are kept
// by the driver only for binaries built against older headers and may have
// older semantics (cuEventElapsedTime versus _v2, for example).
func bind(lib library, libName string, bs []binding) error {
	addrs := make([]uintptr, len(bs))
	for i, b := range bs {
		var lastErr error
		for _, n := range b.names {
			a, err := lib.lookup(n)
			if err == nil && a != 0 {
				addrs[i] = a
				break
			}
			if err == nil {
				err = errors.New("null address")
			}
			lastErr = err
		}
		if addrs[i] == 0 {
			return &SymbolError{Lib: libName, Names: b.names, Err: lastErr}
		}
	}
	for i, b := range bs {
		purego.RegisterFunc(b.fn, addrs[i])
	}
	return nil
}

func names(n ...string) []string { return n }

// osGetenv is the process environment, the default source of KTUNE_NVRTC and
// CUDA_HOME; tests pass their own.
func osGetenv(key string) string { return os.Getenv(key) }
