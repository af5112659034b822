// Package sweep drives a backend through a plan: Run feeds the points to a
// plan.Backend (in this process, or in a pool of worker processes that
// isolate faults), appends and fsyncs each record before the next point
// starts, skips points already recorded with the same hash, and stops
// cleanly on cancellation with a message saying how to resume. It also
// cuts a plan into deterministic shards and merges their outputs.
//
// What a point is and what its hash covers belong to package plan; the
// CUDA backend is package probe; search strategies are package search.
package sweep
