// Package sweep turns a spec into a plan and drives a backend through it.
//
// Build expands a decoded spec into Points: shape × variant × define
// combination × nkv, each with a stable hash of everything that determines
// its result, its gate lengths and its bitwise twin. Run feeds the points to
// a Backend one at a time, appends and fsyncs each record before the next
// point starts, skips points already recorded with the same hash, and stops
// cleanly on cancellation with a message saying how to resume. The CUDA
// backend lives in package probe; Replay, here, serves recorded results so
// that the sweep, resume and gate logic run end to end without a GPU.
package sweep
