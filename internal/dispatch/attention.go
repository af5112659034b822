package dispatch

import (
	"cmp"
	"fmt"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// The dispatch of a shape is chosen per number of query tokens: a q_len-4
// step (speculative decoding) has its own measurements and its own best
// configuration, so q_len is part of a table's shape key, printed in the
// YAML (q_len, omitted at 1) and matched by the header's lookup. The other
// attention options change the kernel an engine must build (its defines
// and arguments), so they key a shape too, and are printed as one label.
// So does the page size of a paged KV cache (the PAGE_SIZE define): an
// engine whose cache is in 16-row pages can launch only a kernel built
// for them, so a table is per page size, printed in the YAML (page_size,
// omitted for a contiguous cache) and matched by the header's lookup.

// A tableKey is what selects a table: the shape (its capacity aside:
// shapeKey) and the page size, 0 for a contiguous cache.
type tableKey struct {
	shape    results.Shape
	pageSize int
}

// keyOf is the table a record's configuration belongs to.
func keyOf(c *results.Config) tableKey {
	n, _ := pageSize(c)
	return tableKey{shapeKey(c.Shape), n}
}

// pageSize is a configuration's page size, from its PAGE_SIZE define (the
// built-ins' paged form): 0 when it has none or 0, an error when it is not
// a count of rows.
func pageSize(c *results.Config) (int, error) {
	v, ok := c.Define(abi.DefinePageSize)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a number of rows", abi.DefinePageSize, v)
	}
	return n, nil
}

// compareKeys orders tables by shape, then page size (contiguous first).
func compareKeys(a, b tableKey) int {
	return cmp.Or(compareShapes(a.shape, b.shape), cmp.Compare(a.pageSize, b.pageSize))
}

// optionsLabel is the text of a shape's attention options other than
// q_len (abi.Attention.Label), "" for none: "softcap=50 sinks".
func optionsLabel(a abi.Attention) string {
	a.QLen = 0
	return a.Label()
}

// compareAttention orders shapes by q_len, then by their other options.
func compareAttention(a, b abi.Attention) int {
	return cmp.Or(cmp.Compare(a.Queries(), b.Queries()), cmp.Compare(optionsLabel(a), optionsLabel(b)))
}

// attentionSuffix is what a shape's label adds for its options.
func attentionSuffix(a abi.Attention) string {
	s := ""
	if q := a.Queries(); q > 1 {
		s += ", q_len " + strconv.Itoa(q)
	}
	if o := optionsLabel(a); o != "" {
		s += ", " + o
	}
	return s
}
