package abi

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// Paged K/V caches, as the engines keep them (vLLM, FlashInfer, SGLang,
// TensorRT-LLM): K and V are one pool of fixed-size pages each, and a
// sequence's logical rows live in the pages its index buffers name, in
// any order. A kernel that reads the cache through the wrong entry, or
// past a sequence's last page, reads another sequence's rows or a spare
// page's NaNs, and the tolerance gate sees it.

// A PageOrder is the order of the elements within one page.
type PageOrder string

// The page orders.
const (
	// PageNHD is token-major: a page is [page_size][kv_heads][width].
	PageNHD PageOrder = "nhd"
	// PageHND is head-major: [kv_heads][page_size][width].
	PageHND PageOrder = "hnd"
	// PageSplitX is vLLM's: a K page is [kv_heads][width/x][page_size][x]
	// with x = 16 bytes of elements, a V page [kv_heads][width][page_size].
	PageSplitX PageOrder = "split_x"
)

// A PageAssign is how the pool's pages are given to the sequences.
type PageAssign string

// The page assignments.
const (
	// PagesShuffled: every sequence's pages lie at seeded random places
	// in the pool, spare pages among them, so a kernel that ignores the
	// table reads the wrong rows.
	PagesShuffled PageAssign = "shuffled"
	// PagesIdentity: sequence b's page j is page b·max_pages + j, the
	// spare pages last.
	PagesIdentity PageAssign = "identity"
)

var pageOrders = []struct {
	o     PageOrder
	order string
}{
	{PageNHD, "[page_size][kv_heads][head_dim] per page"},
	{PageHND, "[kv_heads][page_size][head_dim] per page"},
	{PageSplitX, "vLLM's: K [kv_heads][head_dim/x][page_size][x], x = 16 bytes, V [kv_heads][head_dim][page_size]"},
}

// ParsePageOrder parses io.page_order.
func ParsePageOrder(s string) (PageOrder, error) {
	var want []string
	for _, o := range pageOrders {
		if string(o.o) == s {
			return o.o, nil
		}
		want = append(want, fmt.Sprintf("%s (%s)", o.o, o.order))
	}
	return "", fmt.Errorf("want %s, got %q", joinOr(want), s)
}

// ParsePageAssign parses io.pages.
func ParsePageAssign(s string) (PageAssign, error) {
	switch a := PageAssign(s); a {
	case PagesShuffled, PagesIdentity:
		return a, nil
	}
	return "", fmt.Errorf("want %s (seeded random pages, spares among them) or %s (sequence b's page j at b*max_pages + j), got %q",
		PagesShuffled, PagesIdentity, s)
}

// Paging is what a paged io declares: the page size (an expression over
// the defines, so that a PAGE_SIZE axis sizes the pages), the order within
// a page and the assignment of pages to sequences.
type Paging struct {
	PageSize string
	Order    PageOrder
	Pages    PageAssign
}

// PageSeed seeds the shuffled assignment. It is a constant, not the
// point's seed: the assignment is the workspace's, which points of one
// layout share, and a fixed one is still a permutation no kernel can
// guess.
const PageSeed = 0x9a6e5

// MaxPages is the pages each sequence owns: enough for the capacity.
func MaxPages(s Shape, pageSize int) int { return (s.Capacity + pageSize - 1) / pageSize }

// SparePages is the pages of the pool no sequence owns: one per sequence,
// filled with NaN.
func SparePages(s Shape) int { return s.Batch }

// NumPages is the pool's pages: every sequence's and the spares.
func NumPages(s Shape, pageSize int) int { return s.Batch*MaxPages(s, pageSize) + SparePages(s) }

// A Pool is the page assignment of a paged cache at a shape: which pool
// page holds each sequence's logical page.
type Pool struct {
	PageSize, MaxPages, NumPages int
	// pages[b*MaxPages+j] is sequence b's page j; spare the rest.
	pages, spare []int32
	// owner[p] is the sequence and logical page of pool page p, −1 for a
	// spare.
	owner []int32
}

// NewPool assigns the pool's pages at a shape.
func NewPool(s Shape, pageSize int, assign PageAssign) (*Pool, error) {
	if pageSize < 1 {
		return nil, fmt.Errorf("page size %d: want at least 1", pageSize)
	}
	p := &Pool{PageSize: pageSize, MaxPages: MaxPages(s, pageSize), NumPages: NumPages(s, pageSize)}
	if p.NumPages > math.MaxInt32 {
		return nil, fmt.Errorf("%d pages do not fit an int32 page number", p.NumPages)
	}
	perm := make([]int32, p.NumPages)
	for i := range perm {
		perm[i] = int32(i)
	}
	if assign != PagesIdentity {
		r := rand.New(rand.NewPCG(PageSeed, uint64(pageSize)))
		r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	}
	owned := s.Batch * p.MaxPages
	p.pages, p.spare = perm[:owned], perm[owned:]
	p.owner = make([]int32, p.NumPages)
	for i := range p.owner {
		p.owner[i] = -1
	}
	for i, pg := range p.pages {
		p.owner[pg] = int32(i)
	}
	return p, nil
}

// Page is the pool page holding logical page j of sequence b.
func (p *Pool) Page(b, j int) int { return int(p.pages[b*p.MaxPages+j]) }

// Spare is the pool's spare pages.
func (p *Pool) Spare() []int32 { return p.spare }

// Owner says whose logical page pool page pg is: ok false for a spare.
func (p *Pool) Owner(pg int) (b, j int, ok bool) {
	o := p.owner[pg]
	if o < 0 {
		return 0, 0, false
	}
	return int(o) / p.MaxPages, int(o) % p.MaxPages, true
}

// Used is the pages a sequence of nkv rows uses.
func (p *Pool) Used(nkv int) int { return (nkv + p.PageSize - 1) / p.PageSize }

// The index buffers of a paged cache, all int32, in one allocation
// (AllocPages) in this order: the block table [batch][max_pages] (each
// sequence's pages, all of them, in logical order), the page indptr
// [batch+1] (prefix sums of the used pages), the page indices (the used
// pages of each sequence, concatenated; room for every page) and the last
// page's rows [batch].

// blockTableAt and the others are the buffers' byte offsets.
func blockTableAt(d Dims) int64 { return 0 }
func pageIndptrAt(d Dims) int64 { return 4 * int64(d.Shape.Batch*d.maxPages()) }
func pageIndicesAt(d Dims) int64 {
	return pageIndptrAt(d) + 4*int64(d.Shape.Batch+1)
}
func lastPageLenAt(d Dims) int64 { return pageIndicesAt(d) + 4*int64(d.Shape.Batch*d.maxPages()) }
func pagesEnd(d Dims) int64      { return lastPageLenAt(d) + 4*int64(d.Shape.Batch) }

// maxPages is MaxPages at d, 0 for a layout that is not paged.
func (d Dims) maxPages() int {
	if d.PageSize <= 0 {
		return 0
	}
	return MaxPages(d.Shape, d.PageSize)
}

// IndexBytes are the index buffers for the lengths, as AllocPages holds
// them: one copy writes them all.
func (p *Pool) IndexBytes(d Dims, lengths []int) ([]byte, error) {
	out := make([]byte, pagesEnd(d))
	put := func(at int64, i int, v int) { binary.LittleEndian.PutUint32(out[at+4*int64(i):], uint32(int32(v))) }
	n := 0
	for b, nkv := range lengths {
		if nkv < 1 || nkv > d.Shape.Capacity {
			return nil, fmt.Errorf("sequence %d: nkv %d outside 1..capacity %d", b, nkv, d.Shape.Capacity)
		}
		for j := range p.MaxPages {
			put(blockTableAt(d), b*p.MaxPages+j, p.Page(b, j))
		}
		put(pageIndptrAt(d), b, n)
		used := p.Used(nkv)
		for j := range used {
			put(pageIndicesAt(d), n+j, p.Page(b, j))
		}
		n += used
		put(lastPageLenAt(d), b, nkv-(used-1)*p.PageSize)
	}
	put(pageIndptrAt(d), len(lengths), n)
	return out, nil
}

// A Placement says where each logical element of K or V lies in its
// buffer: element e of row r of KV head h of sequence b.
type Placement struct {
	Layout KVLayout
	Order  PageOrder
	// Width is the row's elements per KV head (head_dim for K, dv for
	// an mla V); Elt an element's bytes.
	Width, Elt int
	// V: the placement of V (split_x lays V out otherwise than K).
	V     bool
	Shape Shape
	Pool  *Pool // paged only
}

// X is split_x's x: the elements in 16 bytes.
func (pl *Placement) X() int { return max(1, 16/pl.Elt) }

// PageElems is the elements of one page.
func (pl *Placement) PageElems() int64 {
	return int64(pl.Pool.PageSize) * int64(pl.Shape.KVHeads) * int64(pl.Width)
}

// Offset is the element offset of element e of row r of KV head h of
// sequence b.
func (pl *Placement) Offset(b, r, h, e int) int64 {
	s, w := pl.Shape, int64(pl.Width)
	switch pl.Layout {
	case BSHD:
		return ((int64(b)*int64(s.Capacity)+int64(r))*int64(s.KVHeads)+int64(h))*w + int64(e)
	case BHSD:
		return ((int64(b)*int64(s.KVHeads)+int64(h))*int64(s.Capacity)+int64(r))*w + int64(e)
	}
	P := pl.Pool.PageSize
	base := int64(pl.Pool.Page(b, r/P)) * pl.PageElems()
	return base + pl.InPage(r%P, h, e)
}

// InPage is the element offset of (row rp, head h, element e) within a
// page.
func (pl *Placement) InPage(rp, h, e int) int64 {
	P, kvh, w := int64(pl.Pool.PageSize), int64(pl.Shape.KVHeads), int64(pl.Width)
	switch pl.Order {
	case PageHND:
		return (int64(h)*P+int64(rp))*w + int64(e)
	case PageSplitX:
		if pl.V {
			return (int64(h)*w+int64(e))*P + int64(rp)
		}
		x := int64(pl.X())
		return ((int64(h)*(w/x)+int64(e)/x)*P+int64(rp))*x + int64(e)%x
	}
	return (int64(rp)*kvh+int64(h))*w + int64(e)
}

// Run is how many consecutive elements of a row of one head lie next to
// each other in the buffer, from a multiple of Run: the unit a copy may
// move at once.
func (pl *Placement) Run() int {
	if pl.Layout == Paged && pl.Order == PageSplitX {
		if pl.V {
			return 1
		}
		return pl.X()
	}
	return pl.Width
}

// Locate names the logical place of buffer element i, for messages.
func (pl *Placement) Locate(i int64) string {
	s, w := pl.Shape, int64(pl.Width)
	kvh := int64(s.KVHeads)
	switch pl.Layout {
	case BSHD:
		cp := int64(s.Capacity)
		return fmt.Sprintf("sequence %d, row %d, KV head %d, dim %d", i/(cp*kvh*w), i/(kvh*w)%cp, i/w%kvh, i%w)
	case BHSD:
		cp := int64(s.Capacity)
		return fmt.Sprintf("sequence %d, KV head %d, row %d, dim %d", i/(kvh*cp*w), i/(cp*w)%kvh, i/w%cp, i%w)
	}
	pg, in := i/pl.PageElems(), i%pl.PageElems()
	if pg >= int64(pl.Pool.NumPages) {
		return fmt.Sprintf("element %d past the pool", i)
	}
	b, j, ok := pl.Pool.Owner(int(pg))
	if !ok {
		return fmt.Sprintf("spare page %d, element %d", pg, in)
	}
	// Invert inPage by search over its few coordinates: messages only.
	P := pl.Pool.PageSize
	for rp := range P {
		for h := range s.KVHeads {
			for e := range pl.Width {
				if pl.InPage(rp, h, e) == in {
					return fmt.Sprintf("page %d (sequence %d, row %d), KV head %d, dim %d", pg, b, j*P+rp, h, e)
				}
			}
		}
	}
	return fmt.Sprintf("page %d (sequence %d), element %d", pg, b, in)
}

// Refuses says why an argument naming a buffer or scalar cannot be passed
// with the io, "" when it can: the strides a layout does not have, and
// the paged vocabulary without pages.
func (io IO) Refuses(name string) string {
	paged := io.OrABI().KVLayout == Paged
	if b := BufferNamed(name); b != nil && b.Paged && !paged {
		return fmt.Sprintf("a paged cache's index buffer, and io.kv_layout is %s", io.OrABI().KVLayout)
	}
	switch name {
	case "page_size", "max_pages", "num_pages", "kv_page_stride", "kv_page_bytes":
		if !paged {
			return fmt.Sprintf("a paged cache's, and io.kv_layout is %s", io.OrABI().KVLayout)
		}
	case "kv_batch_stride", "kv_batch_bytes":
		if paged {
			return "a paged cache's sequences are not at one stride (pass block_table or page_indices)"
		}
	case "kv_row_stride", "kv_head_stride", "kv_row_bytes", "kv_head_bytes":
		if paged && io.Paging.Order == PageSplitX {
			return "split_x pages have no row or head stride of one value"
		}
	case "split_counts":
		if io.SplitCounts == "" {
			return "needs io.split_counts, the expression of each sequence's count"
		}
	case "mask":
		if io.Mask == "" {
			return "needs io.mask, the mask's dtype (f16 or f32)"
		}
	}
	return ""
}
