// Package cubin reads what a compiled CUDA kernel image says about its
// functions, without a GPU and without the CUDA toolkit: a CUBIN is an
// ELF file whose .nv.info sections hold, per function, the facts ptxas
// decided (registers, stack frame, the block size promised by
// __launch_bounds__), and whose .nv.shared.<function> sections are its
// static shared memory. These are the numbers cuFuncGetAttribute reports
// once the image is loaded, and what `cuobjdump -res-usage` prints;
// reading them from the file lets `ktune check` report them on a machine
// with NVRTC and nothing else. A PTX text is read only for its entry
// points: its resources are decided by the driver's JIT when it loads.
package cubin

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A Function is the compiled footprint of one function of a CUBIN.
type Function struct {
	// Name is the function's symbol (a mangled name for a C++ function).
	Name string
	// Entry is set for a __global__ function (one a launch can name).
	Entry bool
	// Registers per thread (EIATTR_REGCOUNT; -1 when the image has none).
	Registers int
	// FrameBytes is the per-thread stack frame in local memory
	// (EIATTR_FRAME_SIZE): register spills and local arrays both live
	// there, so zero means neither; the driver reports it as
	// CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES.
	FrameBytes int
	// StackBytes is the largest stack the function may need with its
	// callees (EIATTR_MAX_STACK_SIZE).
	StackBytes int
	// StaticShared is the size of its .nv.shared section in bytes: the
	// __shared__ variables of fixed size (dynamic shared memory is the
	// launch's, not the image's).
	StaticShared int
	// MaxThreads is the block size __launch_bounds__ promised
	// (EIATTR_MAX_THREADS, x·y·z), 0 when none was given: a larger block
	// is refused at launch.
	MaxThreads int
	// MaxRegisters is a register cap given to ptxas for this function
	// (EIATTR_MAXREG_COUNT, from __launch_bounds__'s second argument or
	// -maxrregcount), 0 when none.
	MaxRegisters int
	// Params are the kernel's parameters in order (EIATTR_KPARAM_INFO:
	// ordinal, offset in the parameter buffer, size), what the driver's
	// cuFuncGetParamInfo reports once it is loaded; ParamsKnown is set
	// for an entry, whose section of its own holds one KPARAM_INFO per
	// parameter (none for a kernel without parameters: params.cubin's
	// none has neither KPARAM_INFO nor EIATTR_CBANK_PARAM_SIZE).
	Params      []Param
	ParamsKnown bool
}

// A Param is one kernel parameter's place in the parameter buffer.
type Param struct{ Ordinal, Offset, Size int }

// An Image is the functions of one CUBIN, by symbol.
type Image struct {
	Functions map[string]*Function
}

// The .nv.info attribute formats and the attributes read here. The
// layout (a format byte, an attribute byte, then a 16-bit value or a
// 16-bit size and that many bytes) is the one every public reader of
// CUBINs documents (cuobjdump's -elf dump prints the same names).
const (
	fmtNVal = 0x01 // no value: the 16 bits that follow are zero
	fmtBVal = 0x02 // an 8-bit value in the 16 bits that follow
	fmtHVal = 0x03 // a 16-bit value
	fmtSVal = 0x04 // a 16-bit size, then that many bytes

	attrMaxThreads   = 0x05 // SVAL: x, y, z (uint32 each), per function
	attrKParamInfo   = 0x17 // SVAL: index, ordinal (u16), offset (u16), flags and size (bits 18..31), per function
	attrFrameSize    = 0x11 // SVAL: symbol index, bytes (global section)
	attrMaxRegCount  = 0x1b // HVAL: register cap, per function
	attrMaxStackSize = 0x23 // SVAL: symbol index, bytes (global section)
	attrRegCount     = 0x2f // SVAL: symbol index, registers (global section)
)

// An attr is one decoded .nv.info entry.
type attr struct {
	id    byte
	value uint16 // NVAL, BVAL, HVAL
	data  []byte // SVAL
}

// parseInfo splits one .nv.info section into its entries.
func parseInfo(b []byte) ([]attr, error) {
	var out []attr
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("truncated attribute (%d bytes left)", len(b))
		}
		a := attr{id: b[1], value: binary.LittleEndian.Uint16(b[2:4])}
		switch b[0] {
		case fmtNVal, fmtBVal, fmtHVal:
			b = b[4:]
		case fmtSVal:
			n := int(a.value)
			if len(b) < 4+n {
				return nil, fmt.Errorf("attribute 0x%02x: size %d past the section's end", a.id, n)
			}
			a.data, a.value = b[4:4+n], 0
			b = b[4+n:]
		default:
			return nil, fmt.Errorf("attribute 0x%02x: unknown format 0x%02x", a.id, b[0])
		}
		out = append(out, a)
	}
	return out, nil
}

// u32s reads an SVAL's data as little-endian 32-bit words.
func (a attr) u32s() []uint32 {
	w := make([]uint32, len(a.data)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(a.data[4*i:])
	}
	return w
}

// ErrNotCUBIN is returned (wrapped) for an image that is not an ELF file.
var ErrNotCUBIN = errors.New("not a CUBIN (no ELF header)")

// Parse reads a CUBIN.
func Parse(image []byte) (*Image, error) {
	if !bytes.HasPrefix(image, []byte(elf.ELFMAG)) {
		return nil, fmt.Errorf("reading the CUBIN: %w", ErrNotCUBIN)
	}
	f, err := elf.NewFile(bytes.NewReader(standardVersion(image)))
	if err != nil {
		return nil, fmt.Errorf("reading the CUBIN: %w", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("reading the CUBIN's symbols: %w", err)
	}
	img := &Image{Functions: map[string]*Function{}}
	// debug/elf drops the null symbol 0, so symbol index i is syms[i-1].
	bySym := map[uint32]*Function{}
	for i, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			continue
		}
		fn := &Function{Name: s.Name, Registers: -1}
		img.Functions[s.Name] = fn
		bySym[uint32(i+1)] = fn
	}
	for _, sec := range f.Sections {
		switch {
		case sec.Name == ".nv.info":
			if err := img.readGlobal(sec, bySym); err != nil {
				return nil, err
			}
		case strings.HasPrefix(sec.Name, ".nv.info."):
			if err := img.readFunction(sec, strings.TrimPrefix(sec.Name, ".nv.info.")); err != nil {
				return nil, err
			}
		case strings.HasPrefix(sec.Name, ".nv.shared."):
			if fn := img.Functions[strings.TrimPrefix(sec.Name, ".nv.shared.")]; fn != nil {
				fn.StaticShared += int(sec.Size)
			}
		}
	}
	return img, nil
}

// standardVersion returns a copy of a 64-bit CUBIN whose e_version is
// the ELF standard's 1. NVCC and NVRTC write their CUDA ELF ABI version
// there (0x76 from CUDA 11.8), which debug/elf rejects as an unknown ELF
// version; nothing else in the header departs from the standard.
func standardVersion(image []byte) []byte {
	const eVersion = 0x14 // e_version in the ELF64 header
	if len(image) < eVersion+4 || image[elf.EI_CLASS] != byte(elf.ELFCLASS64) || image[elf.EI_DATA] != byte(elf.ELFDATA2LSB) {
		return image
	}
	c := bytes.Clone(image)
	binary.LittleEndian.PutUint32(c[eVersion:], uint32(elf.EV_CURRENT))
	return c
}

// sectionAttrs parses the attributes of one .nv.info section.
func sectionAttrs(sec *elf.Section) ([]attr, error) {
	b, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", sec.Name, err)
	}
	attrs, err := parseInfo(b)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", sec.Name, err)
	}
	return attrs, nil
}

// readGlobal reads the section of attributes that name their function by
// symbol index.
func (img *Image) readGlobal(sec *elf.Section, bySym map[uint32]*Function) error {
	attrs, err := sectionAttrs(sec)
	if err != nil {
		return err
	}
	for _, a := range attrs {
		w := a.u32s()
		if len(w) != 2 {
			continue
		}
		fn := bySym[w[0]]
		if fn == nil {
			continue
		}
		switch a.id {
		case attrRegCount:
			fn.Registers = int(w[1])
		case attrFrameSize:
			fn.FrameBytes = int(w[1])
		case attrMaxStackSize:
			fn.StackBytes = int(w[1])
		}
	}
	return nil
}

// readFunction reads the attributes of one function's own section; having
// one is what marks a function as an entry point.
func (img *Image) readFunction(sec *elf.Section, name string) error {
	fn := img.Functions[name]
	if fn == nil {
		return nil
	}
	fn.Entry, fn.ParamsKnown = true, true
	attrs, err := sectionAttrs(sec)
	if err != nil {
		return err
	}
	for _, a := range attrs {
		switch a.id {
		case attrMaxThreads:
			if w := a.u32s(); len(w) == 3 {
				fn.MaxThreads = int(w[0] * w[1] * w[2])
			}
		case attrMaxRegCount:
			fn.MaxRegisters = int(a.value)
		case attrKParamInfo:
			p, err := kparam(a.data)
			if err != nil {
				return fmt.Errorf("reading %s: %w", sec.Name, err)
			}
			fn.Params = append(fn.Params, p)
		}
	}
	sort.Slice(fn.Params, func(i, j int) bool { return fn.Params[i].Ordinal < fn.Params[j].Ordinal })
	for i, p := range fn.Params {
		if p.Ordinal != i {
			return fmt.Errorf("reading %s: parameter ordinals %v are not 0..%d", sec.Name, ordinals(fn.Params), len(fn.Params)-1)
		}
	}
	return nil
}

// kparam decodes one EIATTR_KPARAM_INFO: a 32-bit index (0), the
// parameter's 16-bit ordinal and 16-bit offset, then a word whose bits
// 18..31 are its size in bytes (the low bits are the pointee's log
// alignment, its space and the constant bank, which cuobjdump -elf
// prints beside them). Checked against cuobjdump 11.8 on parameters of
// 1, 2, 4, 8, 32 and 128 bytes (TestParams).
func kparam(b []byte) (Param, error) {
	if len(b) != 12 {
		return Param{}, fmt.Errorf("EIATTR_KPARAM_INFO of %d bytes, want 12", len(b))
	}
	return Param{
		Ordinal: int(binary.LittleEndian.Uint16(b[4:])),
		Offset:  int(binary.LittleEndian.Uint16(b[6:])),
		Size:    int(binary.LittleEndian.Uint32(b[8:]) >> 18),
	}, nil
}

func ordinals(ps []Param) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.Ordinal
	}
	return out
}

// Entries lists the entry points of the image, sorted.
func (img *Image) Entries() []string {
	var out []string
	for n, f := range img.Functions {
		if f.Entry {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// ptxEntry matches a PTX entry directive: `.entry name(` or, for a
// function without parameters, `.entry name` at the end of its line.
var ptxEntry = regexp.MustCompile(`(?m)^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$%][A-Za-z0-9_$]*)`)

// PTXEntries lists the entry points a PTX text declares, sorted.
func PTXEntries(ptx []byte) []string {
	var out []string
	for _, m := range ptxEntry.FindAllSubmatch(ptx, -1) {
		out = append(out, string(m[1]))
	}
	sort.Strings(out)
	return out
}

// SymbolData returns the initial bytes of a variable of the image: the
// size bytes at the symbol's value in its section (a __device__ array's
// initializer, in .nv.global.init).
func SymbolData(image []byte, name string) ([]byte, error) {
	if !bytes.HasPrefix(image, []byte(elf.ELFMAG)) {
		return nil, fmt.Errorf("reading symbol %s: %w", name, ErrNotCUBIN)
	}
	f, err := elf.NewFile(bytes.NewReader(standardVersion(image)))
	if err != nil {
		return nil, fmt.Errorf("reading symbol %s: %w", name, err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("reading symbol %s: %w", name, err)
	}
	for _, s := range syms {
		if s.Name != name {
			continue
		}
		if int(s.Section) <= 0 || int(s.Section) >= len(f.Sections) {
			return nil, fmt.Errorf("symbol %s has no section of data", name)
		}
		data, err := f.Sections[s.Section].Data()
		if err != nil {
			return nil, fmt.Errorf("reading symbol %s: %w", name, err)
		}
		if s.Value+s.Size > uint64(len(data)) {
			return nil, fmt.Errorf("symbol %s: %d bytes at %d past its section's %d", name, s.Size, s.Value, len(data))
		}
		return data[s.Value : s.Value+s.Size], nil
	}
	return nil, fmt.Errorf("the image has no symbol %s", name)
}
