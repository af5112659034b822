// Package kernels embeds ktune's CUDA C++ sources: the attention kernels
// (one file per built-in, all following the ABI in ABI.md and abi.cuh) and
// the measurement helpers in util.cu. They are compiled at run time by NVRTC.
package kernels

import "embed"

// FS holds every .cu and .cuh file of this directory.
//
//go:embed *.cu *.cuh
var FS embed.FS

// StdFS holds nvrtcstd/: minimal C and C++ library headers for device
// code, which NVRTC lacks (nvrtcstd/README.md), given to a variant that
// asks for them (std_headers: true).
//
//go:embed nvrtcstd
var StdFS embed.FS

// StdDir is StdFS's directory of headers.
const StdDir = "nvrtcstd"

// Read returns the text of one embedded file.
func Read(name string) (string, error) {
	b, err := FS.ReadFile(name)
	return string(b), err
}

// util.cu's kernels, ktune's own: the measurement helpers the probes
// launch beside the kernel under test (the bandwidth pass, the stream
// blocker, the clock, the digests, the fills and the copies). Each is
// extern "C", so its name is its symbol.
const (
	ReadBW = "ktune_read_bw"
	Block  = "ktune_block"
	Clock  = "ktune_clock"
	Digest = "ktune_digest"
	Fill   = "ktune_fill"
	Copies = "ktune_copies"
)

// Util returns the names of every kernel util.cu defines.
func Util() []string { return []string{ReadBW, Block, Clock, Digest, Fill, Copies} }
