// Package sass reads the machine code (SASS) of compiled kernels: it finds
// the CUDA disassembler, runs it on a CUBIN, splits the listing into
// kernel functions and answers the two questions the seed kernels taught
// ktune to ask of a listing. Does the main loop place its global loads
// before the serial shuffle/exp chain (the D2 lesson: the compiler did not
// hoist R4's inline V loads, writing the hoist into the source did)? And
// does the kernel move data through local memory (the R4 lesson: a
// runtime-indexed accumulator gets a stack frame, not registers)?
//
// The package only reads text: it needs cuobjdump or nvdisasm to produce a
// listing, but Parse and the analyses work on any saved listing, so they
// run without a GPU or a CUDA toolkit.
package sass
