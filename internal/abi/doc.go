// Package abi is the one home of what a kernel sees from the host: the
// problem shape, the defines derived from it, the element types (dtypes),
// the layouts of K/V and of the partial slots, the io a signature
// declares, and one table of the buffers and scalars a kernel argument may
// name, each with its type, its size or value and its hash text.
//
// The other packages read this vocabulary and add no meaning of their
// own: spec decodes a YAML signature into these types (ParseArg), plan
// hashes them through their canonical text (Arg.String, IO.HashText), the
// probe marshals them (Buffer.Offset, Scalar.Value, Alloc.Size) into the
// device buffers it allocates, and the results format records the shape
// and the defines without defining them. kernels/abi.cuh is the device
// side of the same contract (kernels/ABI.md); PartialStride is its PSTR.
package abi
