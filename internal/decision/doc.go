// Package decision owns what every reader of results must decide the same
// way, below the renderers (report) and the landing gate (verdict) alike:
// which records are the same point and which of them counts (the row
// identity, built on abi.Shape.Identity, and the newest record of each
// point, in table order, with the shapes' unique labels); whether two
// samples differ (Compare at Alpha, with the interval of the change and
// the samples that would decide it); and which configuration wins at a
// point (Decide, the one rule of "what to ship" and the dispatch table,
// which differ only in what ties, Ties; and Fastest, its order, which the
// gate asks for each side's fastest). A verdict
// and a report built from the same records therefore see the same rows,
// the same comparisons and the same winners.
package decision
