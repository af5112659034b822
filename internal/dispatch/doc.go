// Package dispatch turns measured results into a dispatch table: for every
// shape (and batch, and number of query tokens per sequence, q_len, with
// any other attention option of the shape, and the page size of a paged
// KV cache, the PAGE_SIZE define), a list of nkv ranges
// [MinNKV, MaxNKV), each naming the
// configuration an engine should launch there. It exports the table as YAML
// (for people and tools) and as a C header (for an engine to include).
//
// # Choosing a winner at one measured nkv
//
// The candidates are the records of the shape and nkv with Status ok whose
// gates all passed and that carry samples of the chosen probe (cold by
// default: what a decode step sees once the rest of the layer has evicted
// K/V; graph on request). A gate-failed configuration is never a candidate,
// however fast it was.
//
// Candidates are ordered by the median of the probe. The fastest wins
// outright when its raw samples differ significantly from those of the
// runner-up (Mann-Whitney U via benchmath.AssumeNothing, at decision.Alpha): a
// median that is lower only by noise is no reason to change what an engine
// ships. Otherwise every candidate whose samples do not differ
// significantly from the fastest's is tied, and the tie is broken by the
// first of these rules that separates the tied configurations:
//
//  1. the landed configuration (what the engine ships today), if it is
//     among the tied: switching costs a change for no measured gain;
//  2. the configuration that wins at more of the neighbouring measured nkv
//     (on each side, the nearest nkv decided by significance or by rule 1):
//     it extends a range instead of opening a new one of a single point;
//  3. the smaller SPLITS: fewer partials to write and combine, and fewer
//     idle splits at short contexts;
//  4. the lower median, then the configuration's name, so that the choice
//     is total and the table reproducible.
//
// # From measured nkv to ranges
//
// Adjacent measured nkv with the same winner are merged. Where the winner
// changes between measured n₁ < n₂, the boundary is their midpoint in log
// space, round(√(n₁·n₂)), clamped to (n₁, n₂] so that each measured nkv
// stays in the range of its own winner: decode cost grows roughly linearly
// with nkv, so the crossover of two configurations is better guessed by the
// geometric than by the arithmetic mean when nkv is measured on a
// log-spaced axis. The first range starts at 1 and the last has MaxNKV 0
// (no upper bound): the table covers every context length, extrapolating
// the nearest measurement beyond the measured ones.
//
// # Reproducibility
//
// Output depends only on the records and the names and contents of the
// results files: no timestamps, no absolute paths, no map iteration order.
// Regenerating from the same files yields the same bytes.
package dispatch
