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

// Adding a KV layout. Where K's and V's elements lie is Placement
// (layout.go, paged.go): Offset, InPage, Run and Locate. The probe writes
// rows only through it (probe/io.go, long.go, stale.go, pages.go), names
// an element through Locate, and the device fake reads through it. A new
// contiguous order therefore touches layout.go (its name, StridesOf,
// Offset, Locate) and probe/io.go's contiguousCopies, which picks one copy
// per sequence or per (sequence, KV head); and their tests. The paged
// layout touched more, 18 files of code, because it is more than an
// order: a pool with an assignment (paged.go), index buffers derived from
// the lengths and rewritten with the positions (table.go, lengths.go,
// probe/pages.go and setPositions), spec keys for its page size, order
// and assignment (spec's io decoder, validate.go for the arguments a
// layout refuses), a built-in form (PAGE_SIZE: plan's launch arguments,
// its page-size evaluation and hash) and a workspace keyed by its pool
// (probe/buffers.go).
