package plan

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/spec"
)

// restricted returns the index of the first of the spec's restrictions
// (restrict:) that the point at shape sh, defines defs and nkv breaks, or
// -1 when it breaks none. A restriction reading a symbol the point lacks
// does not apply to it. An evaluation error (a division by zero) is the
// spec's mistake, at the restriction.
func (b *builder) restricted(sh *spec.Shape, defs map[string]string, nkv int) (int, error) {
	if len(b.s.Restrictions) == 0 {
		return -1, nil
	}
	env := expr.Env{"heads": int64(sh.Heads), "kv_heads": int64(sh.KVHeads), "head_dim": int64(sh.HeadDim),
		"batch": int64(sh.Batch), "group": int64(sh.Heads / sh.KVHeads), "capacity": int64(sh.Capacity), spec.NKV: int64(nkv),
		spec.QLenSymbol: int64(sh.Attention.Queries())}
	for name, val := range defs {
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			env[name] = n
		}
	}
	for i := range b.s.Restrictions {
		r := &b.s.Restrictions[i]
		ok, _, err := r.Allows(env)
		if err != nil {
			col := r.Pos.Col
			var ee *expr.Error
			if errors.As(err, &ee) {
				col, err = col+ee.Col-1, errors.New(ee.Msg)
			}
			return 0, fmt.Errorf("%s:%d:%d: restrict[%d] %q at shape %s, %s, nkv %d: %w", b.s.Path, r.Pos.Line, col, i, r.Text,
				sh.Name, sorted(defs, false).String(), nkv, err)
		}
		if !ok {
			return i, nil
		}
	}
	return -1, nil
}
