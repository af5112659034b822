package decision

// Fastest returns the index of the fastest of n candidates at one point,
// by median (median(i), ns; a candidate without one is given as ok(i)
// false), the first of equal medians, or −1 when none may take part. It
// is the winner rule of "what to ship" (the fastest configuration that
// passed every gate) and of the landing gate (each side's fastest
// passing configuration); the dispatch table starts from the same order
// and breaks the ties the significance test leaves (Decide).
func Fastest(n int, ok func(i int) bool, median func(i int) float64) int {
	best := -1
	for i := range n {
		if ok(i) && (best < 0 || median(i) < median(best)) {
			best = i
		}
	}
	return best
}
