package variants

import (
	"sort"
	"strconv"
	"strings"
)

// Which built-in forms are invariant: a sequence's output bits not
// depending on the batch, the position in it or the dispatch arm.
//
// mma (kernels/mma.cu over mma_core.cuh) in every form: a block's rows
// are a function of its sequence's own length (gq_range: one split per
// MINROWS rows, at most SPLITS; FIXCHUNK: fixed rows, the last split the
// rest; SPLITSIZE: fixed rows), its warps' steps and their merge are in a
// fixed order, and the combine merges one sequence's SPLITS slots in a
// fixed order: nothing reads the batch index or the batch size. Two
// configurations give the same bits when they split alike and compute
// alike; they may differ in when loads go out (PF, LDH, PTE), the path
// the same operands take to the registers (KVSM), when the next launch
// may start (PDL, PDLEND), and, with SPLITSIZE, in SPLITS and
// MINROWS (the extra splits are idle: their slots merge as exact zeros)
// and CW 1 against 2 (one combine, its loads issued earlier). These are
// claims by construction; the invariance gate checks them on the device
// (experiments/invariance.yaml). mmaf and mmac (another merge, in the
// last block of each sequence) and the other built-ins are not classed
// (nil Invariance): their invariance is the gate's to show.

// mmaSameBits are mma's defines that leave every output bit as it is.
var mmaSameBits = map[string]bool{"PF": true, "LDH": true, "PDLEND": true, "PDL": true, "PTE": true, "KVSM": true}

// mmaInvariance is mma's catalog.Kernel.Invariance.
func mmaInvariance(defines map[string]string) string {
	num := func(name string) int {
		n, _ := strconv.Atoi(defines[name])
		return n
	}
	drop := map[string]bool{}
	if num(DefineSplitSize) > 0 {
		drop["SPLITS"], drop["MINROWS"], drop["FIXCHUNK"] = true, true, true
	} else if num("FIXCHUNK") > 0 {
		drop["MINROWS"] = true
	}
	var parts []string
	for name, v := range defines {
		if mmaSameBits[name] || drop[name] {
			continue
		}
		if name == "CW" && v == "2" {
			v = "1" // the same combine, its first loads earlier
		}
		parts = append(parts, name+"="+v)
	}
	sort.Strings(parts)
	return "mma " + strings.Join(parts, " ")
}

// InvarianceClass is the class of a built-in kernel's configuration
// (catalog.Kernel.Invariance): ok when its output bits do not depend on
// the batch or the position in it, class equal for configurations whose
// bits are equal to one another's. ok is false for a kernel that is not a
// built-in or claims nothing.
func InvarianceClass(kernel string, defines map[string]string) (class string, ok bool) {
	k, found := Lookup(kernel)
	if !found || k.Invariance == nil {
		return "", false
	}
	c := k.Invariance(defines)
	return c, c != ""
}
