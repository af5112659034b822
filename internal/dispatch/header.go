package dispatch

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/kvtype"
)

// headerTypes declares the table's C types and a lookup. The ranges of a
// shape are contiguous and ascending, so a linear scan is both simplest
// and fast enough: a handful of entries, looked up once per decode step.
const headerTypes = `#define KTUNE_DISPATCH_MAX_DEFINES %d

struct ktune_dispatch_define {
	const char *name;
	const char *value;
};

/* One nkv range [min_nkv, max_nkv); max_nkv 0 = no upper bound. Compile
 * kernel with -DHEAD_DIM, -DKV_F16 (and -DKV_BF16=1 or -DKV_FP8=1 for
 * those K/V types; from the shape) and defines; launch
 * attn_partial with grid/block and attn_combine with
 * combine_grid/combine_block (the fused kernels mmaf and mmac launch
 * no combine: they write out themselves). fp8 kernels take the
 * [2][kv_heads] f32 K and V scales last. PDL=1 kernels may be launched
 * plainly; launching attn_combine with programmatic stream serialization
 * hides its launch behind attn_partial, as measured. */
struct ktune_dispatch_range {
	int min_nkv;
	int max_nkv;
	const char *variant;
	const char *kernel;
	int splits;
	int n_defines;
	struct ktune_dispatch_define defines[KTUNE_DISPATCH_MAX_DEFINES];
	int grid[3];
	int block[3];
	int combine_grid[3];
	int combine_block[3];
	double median_ns; /* measured at the range's largest measured nkv */
};

struct ktune_dispatch_shape {
	const char *name;
	int heads;
	int kv_heads;
	int head_dim;
	int kv_type; /* KTUNE_KV_*: the K/V element type */
	int q_len;   /* query tokens per sequence (speculative decoding: 2-8) */
	int page_size; /* rows per page of a paged KV cache (PAGE_SIZE), 0 for a contiguous one */
	const char *options; /* other attention options ("softcap=50 sinks"), "" for none */
	int batch;
	int n_ranges;
	const struct ktune_dispatch_range *ranges;
};
`

const headerLookup = `
/* ktune_dispatch_find_shape returns the entry of a shape with q_len query
 * tokens per sequence, a KV cache in pages of page_size rows (0: a
 * contiguous cache) and no other attention option, or NULL; an entry
 * with options (softcap, sinks, ...) is found by scanning
 * ktune_dispatch_shapes for its options string. */
static inline const struct ktune_dispatch_shape *
ktune_dispatch_find_shape(int heads, int kv_heads, int head_dim, int kv_type, int q_len, int page_size, int batch)
{
	int i;
	for (i = 0; i < KTUNE_DISPATCH_N_SHAPES; i++) {
		const struct ktune_dispatch_shape *s = &ktune_dispatch_shapes[i];
		if (s->heads == heads && s->kv_heads == kv_heads && s->head_dim == head_dim &&
		    s->kv_type == kv_type && s->q_len == q_len && s->page_size == page_size &&
		    s->options[0] == 0 && s->batch == batch)
			return s;
	}
	return 0;
}

/* ktune_dispatch_find returns the range of shape s holding nkv, or NULL
 * when nkv < 1. */
static inline const struct ktune_dispatch_range *
ktune_dispatch_find(const struct ktune_dispatch_shape *s, int nkv)
{
	int i;
	for (i = 0; i < s->n_ranges; i++) {
		const struct ktune_dispatch_range *r = &s->ranges[i];
		if (nkv >= r->min_nkv && (r->max_nkv == 0 || nkv < r->max_nkv))
			return r;
	}
	return 0;
}
`

// WriteHeader writes the table as a C header (C99 and C++) that an engine
// includes: static const arrays of shapes and their nkv ranges, and two
// small lookups.
func (t *Table) WriteHeader(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString(t.comment("// "))
	b.WriteString("\n#ifndef KTUNE_DISPATCH_H\n#define KTUNE_DISPATCH_H\n\n")

	maxDefs := 1 // a zero-length array is not C
	for _, st := range t.Shapes {
		for _, r := range st.Ranges {
			maxDefs = max(maxDefs, len(r.Defines))
		}
	}
	fmt.Fprintf(&b, headerTypes, maxDefs)
	b.WriteString("\n" + kvEnums())

	// Arrays are named by index: shape labels need not be C identifiers.
	for i, st := range t.Shapes {
		fmt.Fprintf(&b, "\n/* %s */\n", cComment(shapeLabel(st.key())))
		fmt.Fprintf(&b, "static const struct ktune_dispatch_range ktune_dispatch_ranges_%d[] = {\n", i)
		for _, r := range st.Ranges {
			var defs []string
			for _, d := range r.Defines {
				defs = append(defs, fmt.Sprintf("{%s, %s}", cString(d.Name), cString(d.Value)))
			}
			if len(defs) == 0 {
				defs = []string{"{0, 0}"}
			}
			fmt.Fprintf(&b, "\t{%d, %d, %s, %s, %d, %d, {%s}, %s, %s, %s, %s, %s},\n",
				r.MinNKV, r.MaxNKV, cString(r.Variant), cString(r.Kernel), r.Splits, len(r.Defines),
				strings.Join(defs, ", "), cDim(r.Grid), cDim(r.Block), cDim(r.CombineGrid), cDim(r.CombineBlock),
				formatNS(r.MedianNS))
		}
		b.WriteString("};\n")
	}

	fmt.Fprintf(&b, "\n#define KTUNE_DISPATCH_N_SHAPES %d\n\n", len(t.Shapes))
	b.WriteString("static const struct ktune_dispatch_shape ktune_dispatch_shapes[KTUNE_DISPATCH_N_SHAPES] = {\n")
	for i, st := range t.Shapes {
		s := st.Shape
		fmt.Fprintf(&b, "\t{%s, %d, %d, %d, %s, %d, %d, %s, %d, %d, ktune_dispatch_ranges_%d},\n",
			cString(s.Name), s.Heads, s.KVHeads, s.HeadDim, kvEnum(s.KVType()), s.Attention.Queries(), st.PageSize,
			cString(optionsLabel(s.Attention)), s.Batch, len(st.Ranges), i)
	}
	b.WriteString("};\n")
	b.WriteString(headerLookup)
	b.WriteString("\n#endif /* KTUNE_DISPATCH_H */\n")

	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing dispatch header: %w", err)
	}
	return nil
}

// kvEnum is the C name of a K/V type's code (KTUNE_KV_F16).
func kvEnum(t *kvtype.Type) string { return "KTUNE_KV_" + strings.ToUpper(t.Name) }

// kvEnums declares the K/V type codes, one enumerator per kvtype.
func kvEnums() string {
	var b strings.Builder
	b.WriteString("/* The K/V element types of kv_type. */\nenum ktune_kv_type {\n")
	for _, t := range kvtype.All {
		fmt.Fprintf(&b, "\t%s = %d,\n", kvEnum(t), t.Code)
	}
	b.WriteString("};\n")
	return b.String()
}

func cDim(d [3]int) string { return fmt.Sprintf("{%d, %d, %d}", d[0], d[1], d[2]) }

// cString quotes s as a C string literal. Go's %q is not C: it may emit
// \u escapes, so bytes outside printable ASCII become octal escapes.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '?':
			// "??" starts a trigraph in older C dialects.
			b.WriteString(`\?`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cComment keeps a label from closing the comment it sits in.
func cComment(s string) string { return strings.ReplaceAll(s, "*/", "* /") }
