package decision

// Fastest returns the index of the fastest of n candidates at one point,
// by median (median(i), ns; a candidate without one is given as ok(i)
// false), the first of equal medians, or −1 when none may take part. It
// is the landing gate's pick of each side's fastest passing
// configuration, and the order Decide starts from ("what to ship" and
// the dispatch table).
func Fastest(n int, ok func(i int) bool, median func(i int) float64) int {
	best := -1
	for i := range n {
		if ok(i) && (best < 0 || median(i) < median(best)) {
			best = i
		}
	}
	return best
}
