package probe

import "slices"

// Read-back buffers reused within a gate length (readBack).

// takeSpare returns a read-back buffer of n bytes: a spare one of that
// size if there is one, else a new one. Every byte is overwritten by the
// read.
func (r *session) takeSpare(n int) []byte {
	for i, b := range r.spare {
		if len(b) == n {
			r.spare = slices.Delete(r.spare, i, i+1)
			return b
		}
	}
	return make([]byte, n)
}

// recycle gives back read-back buffers no verdict refers to any more. A
// buffer given twice is kept once: two read-backs into one buffer would
// compare equal whatever the kernel wrote.
func (r *session) recycle(bufs ...[]byte) {
	for _, b := range bufs {
		if len(b) == 0 || slices.ContainsFunc(r.spare, func(s []byte) bool { return &s[0] == &b[0] }) {
			continue
		}
		if len(r.spare) < maxSpare {
			r.spare = append(r.spare, b)
		}
	}
}

// maxSpare bounds the spare read-back buffers: a gate length launches at
// most three pairs whose partials are judged together.
const maxSpare = 4
