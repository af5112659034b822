// Package kernels embeds ktune's CUDA C++ sources: the attention kernels
// (one file per built-in, all following the ABI in ABI.md and abi.cuh) and
// the measurement helpers in util.cu. They are compiled at run time by NVRTC.
package kernels

import "embed"

// FS holds every .cu and .cuh file of this directory.
//
//go:embed *.cu *.cuh
var FS embed.FS

// Read returns the text of one embedded file.
func Read(name string) (string, error) {
	b, err := FS.ReadFile(name)
	return string(b), err
}
