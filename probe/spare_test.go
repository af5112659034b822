package probe

import "testing"

// Read-back buffers are reused only once given back, never two at once:
// a partial read into the buffer another verdict still compares against
// would make any two launches look identical.
func TestSpareReadBackBuffers(t *testing.T) {
	r := &pointRun{}
	a, b := r.takeSpare(64), r.takeSpare(64)
	if &a[0] == &b[0] {
		t.Fatal("two live read-backs share a buffer")
	}
	r.recycle(a, a, nil)
	c, d := r.takeSpare(64), r.takeSpare(64)
	if &c[0] != &a[0] || &d[0] == &a[0] || &d[0] == &b[0] {
		t.Error("a buffer given back twice was handed out twice, or not reused")
	}
	if e := r.takeSpare(32); len(e) != 32 {
		t.Errorf("a spare of the wrong size: %d bytes", len(e))
	}
	for range 2 * maxSpare {
		r.recycle(make([]byte, 8))
	}
	if len(r.spare) > maxSpare {
		t.Errorf("%d spares kept", len(r.spare))
	}
}
