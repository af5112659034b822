package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
)

// A Module is a prebuilt file that some of a step's launches come from,
// other than the variant's kernel: an engine that builds its partial and
// its combine apart ships two files (two CUBINs, or a PTX and a CUBIN),
// and each is loaded as a module of its own. Its digest stands for its
// bytes in the hash, as an artifact's does.
type Module struct {
	Path    string
	Kind    string   // spec.ArtifactPTX, ArtifactCUBIN or ArtifactFatbin
	Image   []byte   `json:",omitempty"`
	SHA256  string   `json:",omitempty"`
	Missing bool     `json:",omitempty"` // not built when the plan was made
	Entries []string // the entries of the launches loaded from it, each once
}

// HashText is the module's hash text: its kind, its digest (or that it is
// missing) and the entries taken from it.
func (m Module) HashText() string {
	d := "sha256:" + m.SHA256
	if m.Missing {
		d = "missing"
	}
	return fmt.Sprint(m.Kind, " ", d, " ", m.Entries)
}

// modules reads the files of the launches that name a kernel of their
// own, one Module per file in launch order. An entry loaded from a module
// is not looked up in the variant's kernel.
func (b *builder) modules(v *spec.Variant) ([]Module, error) {
	var out []Module
	for _, l := range launchesOf(v, false, abi.Attention{}, abi.ABIIO) {
		if l.Kernel == "" {
			continue
		}
		i := slices.IndexFunc(out, func(m Module) bool { return m.Path == l.Kernel })
		if i < 0 {
			m := Module{Path: l.Kernel, Kind: spec.ArtifactKind(l.Kernel)}
			data, err := os.ReadFile(l.Kernel)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				m.Missing = true
			case err != nil:
				return nil, fmt.Errorf("reading the kernel of a launch of variant %s: %w", v.Name, err)
			default:
				m.Image, m.SHA256 = data, sha256Hex(data)
			}
			out, i = append(out, m), len(out)
		}
		if !slices.Contains(out[i].Entries, l.Entry) {
			out[i].Entries = append(out[i].Entries, l.Entry)
		}
	}
	return out, nil
}

// A TritonMeta is what ktune reads of the metadata JSON Triton writes
// beside a compiled kernel (its cache's <name>.json; CompiledKernel's
// metadata). The keys are Triton's: triton/compiler/compiler.py and the
// NVIDIA backend's compiler.py fill them, and its launcher
// (third_party/nvidia/backend/driver.py) launches num_warps × 32 threads
// with shared bytes of dynamic shared memory and passes, after the
// kernel's own arguments, one pointer per scratch kind its version has:
// global_scratch and, in later versions, profile_scratch, a null
// pointer when the size is 0. A key's absence says the version has no
// such pointer.
type TritonMeta struct {
	Name               string `json:"name"`
	NumWarps           int    `json:"num_warps"`
	NumCTAs            int    `json:"num_ctas"`
	Shared             int    `json:"shared"`
	GlobalScratchSize  *int64 `json:"global_scratch_size"`
	ProfileScratchSize *int64 `json:"profile_scratch_size"`
	// SHA256 is the digest of the JSON's bytes, hashed with the point.
	SHA256 string `json:"-"`
}

// warpSize is the threads of a warp, which Triton's num_warps counts in.
const warpSize = 32

// ParseTritonMeta reads a Triton metadata JSON and checks what ktune
// needs of it: an entry name and a warp count, and no scratch that the
// launcher would have to allocate (ktune passes null pointers).
func ParseTritonMeta(data []byte) (*TritonMeta, error) {
	var m TritonMeta
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return nil, fmt.Errorf("decoding Triton metadata: %w", err)
	}
	switch {
	case m.Name == "":
		return nil, fmt.Errorf("Triton metadata without a name (the kernel's entry)")
	case m.NumWarps < 1 || m.NumWarps*warpSize > 1024:
		return nil, fmt.Errorf("Triton metadata: num_warps %d is not 1..32", m.NumWarps)
	case m.NumCTAs > 1:
		return nil, fmt.Errorf("Triton metadata: num_ctas %d: a cluster launch of a Triton kernel is not supported", m.NumCTAs)
	case m.Shared < 0:
		return nil, fmt.Errorf("Triton metadata: shared %d is negative", m.Shared)
	}
	for _, s := range []struct {
		key  string
		size *int64
	}{{"global_scratch_size", m.GlobalScratchSize}, {"profile_scratch_size", m.ProfileScratchSize}} {
		if s.size != nil && *s.size != 0 {
			return nil, fmt.Errorf("Triton metadata: %s %d: the kernel needs scratch its launcher allocates, which ktune does not (it passes a null pointer)", s.key, *s.size)
		}
	}
	m.SHA256 = sha256Hex(data)
	return &m, nil
}

// ScratchArgs are the arguments Triton's launcher appends to the
// kernel's own: one null pointer (8 zero bytes) per scratch kind the
// metadata names, global first.
func (m *TritonMeta) ScratchArgs() []abi.Arg {
	var out []abi.Arg
	for _, s := range []*int64{m.GlobalScratchSize, m.ProfileScratchSize} {
		if s != nil {
			out = append(out, abi.Arg{Type: abi.ArgU64, Value: "0"})
		}
	}
	return out
}

// tritonMeta reads the metadata of a launch, once per file; nil with a
// nil error when it does not exist yet (a build output, like an
// artifact: the point then fails until it is built).
func (b *builder) tritonMeta(path string) (*TritonMeta, error) {
	key := "triton:" + path
	text, ok := b.text[key]
	if !ok {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("reading Triton metadata: %w", err)
		}
		text = string(data)
		b.text[key] = text
	}
	m, err := ParseTritonMeta([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// applyTriton gives launch l what a Triton launcher would: the block of
// num_warps warps, the metadata's dynamic shared memory and the trailing
// scratch pointers. The entry must be the metadata's kernel name. A
// missing metadata leaves l at one thread and is reported by missing.
func (b *builder) applyTriton(l *Launch, ls spec.Launch) error {
	m, err := b.tritonMeta(ls.Triton)
	if err != nil || m == nil {
		return err
	}
	if m.Name != ls.Entry {
		return fmt.Errorf("entry %s, but the Triton metadata %s is of kernel %s", ls.Entry, ls.Triton, m.Name)
	}
	l.Block, l.Shared, l.Metadata = [3]int{m.NumWarps * warpSize, 1, 1}, m.Shared, m.SHA256
	l.Args = append(slices.Clone(l.Args), m.ScratchArgs()...)
	return nil
}

// missingMeta is the first Triton metadata of v's launches that does not
// exist yet, "" when there is none: the point's Source is then Missing,
// and it fails until the build wrote it.
func (b *builder) missingMeta(v *spec.Variant) string {
	for _, l := range v.Launches {
		if l.Triton == "" {
			continue
		}
		if m, err := b.tritonMeta(l.Triton); err == nil && m == nil {
			return l.Triton
		}
	}
	return ""
}

// missingFiles lists the launch files of a variant that do not exist yet:
// its launches' own kernels and their Triton metadata.
func missingFiles(v *spec.Variant) []string {
	var out []string
	for _, l := range v.Launches {
		for _, p := range []string{l.Kernel, l.Triton} {
			if p == "" || slices.Contains(out, p) {
				continue
			}
			if _, err := os.Stat(p); err != nil {
				out = append(out, p)
			}
		}
	}
	return out
}
