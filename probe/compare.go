package probe

// diffBytes is the invariance gate's byte comparison, until that gate
// moves to package gate, which has its own.
// diffBytes counts the bytes at which a and b differ (a length difference
// counts as differing bytes); first is the first differing index, −1 if
// none.
func diffBytes(a, b []byte) (n, first int) {
	first = -1
	m := min(len(a), len(b))
	for i := 0; i < m; i++ {
		if a[i] != b[i] {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if len(a) != len(b) {
		if first < 0 {
			first = m
		}
		n += max(len(a), len(b)) - m
	}
	return n, first
}
