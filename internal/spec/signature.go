// A variant's declared signature: the launches of one decode step with
// their entry points and argument lists, and the io of their buffers. The
// format is specified in doc.go ("Bring your own kernel"); the vocabulary
// the arguments name, and what each name means, is package abi's.

package spec

import (
	"strings"

	"github.com/ktune/ktune/internal/abi"
)

// A Launch is one kernel launch of a decode step, in stream order.
type Launch struct {
	// Entry names the __global__ function: an extern "C" name, or for a
	// .cu source any C++ name expression NVRTC can resolve (a template
	// instantiation such as partial<__half, 4>); for a prebuilt PTX, CUBIN
	// or fatbin the symbol as it is in the file (the mangled name).
	Entry  string
	Grid   []string  // 1 to 3 expressions
	Block  []string  // 1 to 3 expressions
	Shared string    // bytes of dynamic shared memory; empty: 0
	Args   []abi.Arg // the parameters, in order
	// Cluster is the launch's thread-block cluster, 1 to 3 expressions;
	// empty: none (Variant.Cluster).
	Cluster []string
	// Kernel is the prebuilt PTX, CUBIN or fatbin this launch's entry is
	// loaded from, resolved against the spec's directory; empty: the
	// variant's kernel. An engine that builds its partial and its combine
	// apart ships two files, and each is loaded as its own module.
	Kernel string
	// Triton is the metadata JSON a Triton build wrote beside the launch's
	// CUBIN, resolved against the spec's directory: the block (num_warps
	// warps), the dynamic shared memory and the scratch pointers Triton
	// appends to the signature come from it (plan/launchmeta.go), so block
	// and shared are then not given.
	Triton string
	// SharedSymbol names a __device__ or __constant__ integer of the
	// launch's module that holds its dynamic shared memory in bytes, as
	// an engine that sizes it at build time keeps it: read when the module
	// loads (probe/modules.go), so shared is then not given.
	SharedSymbol string
	// BlocksPerSM is the launch's declared blocks_per_sm: the blocks of
	// its kernel that fit on one SM at its block and shared memory, as the
	// engine's host computes them (cudaOccupancyMaxActiveBlocksPerMultiprocessor);
	// 0: not declared. The grid's blocks_per_sm reads it, and the probe
	// checks it against the kernel on the device whether or not the grid
	// reads it.
	BlocksPerSM int
	Pos         Pos
}

// Artifact kinds: a variant whose kernel is a prebuilt file is loaded
// as it is, without NVRTC.
const (
	ArtifactPTX    = "ptx"
	ArtifactCUBIN  = "cubin"
	ArtifactFatbin = "fatbin"
)

// ArtifactKind returns the artifact kind of a kernel path by its
// extension, "" for a source.
func ArtifactKind(path string) string { return artifactKind(path) }

func artifactKind(path string) string {
	for _, k := range []string{ArtifactPTX, ArtifactCUBIN, ArtifactFatbin} {
		if strings.HasSuffix(path, "."+k) {
			return k
		}
	}
	return ""
}
