/* The by-value parameter struct of params_struct.cu, in plain C so that a
 * host compiler's offsetof checks ktune's layout of the spec's structs
 * (probe/params_test.go). The kernel and the spec declare the same
 * fields; this header is their one C statement. */
struct dims {
    int heads;            /* heads */
    long long row_bytes;  /* kv_row_bytes */
    unsigned group;       /* heads / kv_heads */
};

struct params {
    const void *q;        /* q */
    void *out;            /* out */
    int flag;             /* 1 */
    struct dims d;        /* nested, 8-aligned */
    long long strides[3]; /* kv_head_stride * 2, three times */
    float scale;          /* 1/sqrt(head_dim) */
    const void *none;     /* null */
    uint3 grid;           /* SPLITS, heads, batch */
    char gap[20];         /* the spec places tail by offset: 120 */
    int tail;             /* capacity - 1 */
    char pad[4];          /* sizeof 128, as the spec's size says */
};
