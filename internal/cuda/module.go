package cuda

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
)

// An ImageKind is what a module image holds.
type ImageKind string

// The images the driver loads: a CUBIN (an ELF for one architecture), a
// fatbin (CUBINs and PTX for several), or PTX text, compiled for the
// device by the driver's JIT when loaded.
const (
	ImageCUBIN  ImageKind = "cubin"
	ImageFatbin ImageKind = "fatbin"
	ImagePTX    ImageKind = "ptx"
)

// fatbinMagic is the first word of a fatbin (fatbinary.h's
// FATBIN_CONTROL_SECTION_MAGIC, little-endian).
var fatbinMagic = []byte{0x50, 0xed, 0x55, 0xba}

// Kind tells an image's kind from its first bytes: ELF is a CUBIN, the
// fatbin magic a fatbin, anything else is taken for PTX text.
func Kind(image []byte) ImageKind {
	switch {
	case bytes.HasPrefix(image, []byte("\x7fELF")):
		return ImageCUBIN
	case bytes.HasPrefix(image, fatbinMagic):
		return ImageFatbin
	}
	return ImagePTX
}

// JIT options of cuModuleLoadDataEx (cuda.h's CUjit_option).
const (
	jitErrorLogBuffer          = 5
	jitErrorLogBufferSizeBytes = 6
)

// jitLogBytes bounds the JIT's error log; ptxas's messages for one module
// fit easily.
const jitLogBytes = 16 << 10

// LoadImage loads a CUBIN, a fatbin or PTX into the context with
// cuModuleLoadDataEx. PTX is compiled by the driver's JIT for this device
// (so "landed" can be the very PTX an engine ships, not a rebuild of its
// source); its text needs a terminating NUL, which LoadImage adds. When
// the driver refuses the image, the error carries the JIT's log, which
// says why (a PTX ISA newer than the driver, an unknown target).
func (c *Context) LoadImage(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("loading a module: empty image")
	}
	kind := Kind(image)
	arena, err := newOffHeap(len(image) + 1 + jitLogBytes + 64)
	if err != nil {
		return nil, fmt.Errorf("loading a %s module: %w", kind, err)
	}
	defer arena.free()
	img := arena.alloc(len(image)+1, 16)
	copy(arena.mem[img:], image)
	arena.mem[img+len(image)] = 0
	logOff := arena.alloc(jitLogBytes, 8)
	opts := arena.alloc(8, 8) // two 4-byte CUjit_option values
	putU32(arena.mem[opts:], jitErrorLogBuffer)
	putU32(arena.mem[opts+4:], jitErrorLogBufferSizeBytes)
	vals := arena.alloc(16, 8) // two void* values: the buffer, its size
	putU64(arena.mem[vals:], uint64(arena.base())+uint64(logOff))
	putU64(arena.mem[vals+8:], jitLogBytes)

	var h uintptr
	base := arena.base()
	err = c.call("cuModuleLoadDataEx", func() int32 {
		return c.d.cuModuleLoadDataEx(&h, base+uintptr(img), 2, base+uintptr(opts), base+uintptr(vals))
	})
	runtime.KeepAlive(arena)
	onSignalStack() // the PTX JIT is a compiler too
	if err != nil {
		log := string(arena.mem[logOff : logOff+jitLogBytes])
		if i := strings.IndexByte(log, 0); i >= 0 {
			log = log[:i]
		}
		if log = strings.TrimSpace(log); log != "" {
			return nil, fmt.Errorf("loading a %d-byte %s module: %w; JIT log:\n%s", len(image), kind, err, log)
		}
		return nil, fmt.Errorf("loading a %d-byte %s module: %w", len(image), kind, err)
	}
	return &Module{c: c, h: h}, nil
}
