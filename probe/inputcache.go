package probe

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
)

// The gate inputs of a sweep's kernels, drawn once. Every kernel of a
// shape and seed is judged on the same sets: a set's bytes are a function
// of the shape, the seed, the rows drawn and, for the sets that say so,
// the lengths and the split count (setKey), and the oracle's output at a
// length is a function of the set and that length alone
// (oracle.References). Deriving a set copies and rewrites up to a few
// hundred MB at batch 16 and its references take a float64 pass over it,
// which made the host's share of the gates most of a kernel's gate time;
// the kernels after the first of a shape now find both here. The device
// share (every launch, every comparison) is paid by every kernel as
// before: only what cannot differ between kernels is shared.

// defaultInputCacheBytes bounds the host memory the cache keeps: every set
// of one batch-16 shape of the frontier (about 2 GB with its per-length
// peaked sets) and more, well inside an H200 host's memory.
const defaultInputCacheBytes = 6 << 30

// A setKey is everything a derived input set depends on.
type setKey struct {
	inputs inputsKey
	set    oracle.InputSet
	rows   int
	// lengths and splits are kept only for the sets whose data depends
	// on them (InputSet.PerLength, InputSet.PerSplits).
	lengths string
	splits  int
	// qDtype is the dtype q was rounded to at its upload (qUpload rounds
	// the set's Q in place, and the oracle computes with the rounded q).
	qDtype abi.Dtype
	// baseRows, for a scaled type only, are the rows of the base the set
	// was derived from: its scales come from every value of the base, so
	// a set derived from a longer base holds other bytes (baseServes).
	baseRows int
}

// keyOfSet is the key of set derived with rows rows per sequence from a
// base of baseRows rows, for the gate lengths, splits and q dtype.
func keyOfSet(in inputsKey, set oracle.InputSet, rows, baseRows int, lengths []int, splits int, q abi.Dtype) setKey {
	k := setKey{inputs: in, set: set, rows: rows, qDtype: q}
	if in.shape.KVType().Scaled {
		k.baseRows = baseRows
	}
	if set.PerLength() {
		k.lengths = fmt.Sprint(lengths)
	}
	if set.PerSplits() {
		k.splits = splits
	}
	return k
}

// An inputCache keeps derived sets and their references, least recently
// used evicted first once the bytes pass limit. The bytes are the host
// memory the cached sets hold: an array of K or V that several sets
// share (a base and its views, oracle.FromBaseShared) counts once, for as
// long as one of them is cached. Counting it once per set made the
// per-length peaked sets of one kernel, views of one base, look like
// gigabytes, and they pushed out every other set of the shape.
type inputCache struct {
	limit, used int64
	tick        uint64
	sets        map[setKey]*cachedSet
	byInputs    map[*oracle.Inputs]*cachedSet
	// arrays are the K and V arrays the cached sets hold, by their first
	// element, with the bytes each holds and how many sets hold it.
	arrays map[*float64]*heldArray
	// hits and misses count set lookups (tests, the gate log).
	hits, misses int
}

// A cachedSet is one set and the references computed on it so far.
type cachedSet struct {
	key  setKey
	in   *oracle.Inputs
	refs map[string]oracle.Output // by the launch's lengths (refsKey)
	// tiled is in marked Tiled, the long gates' view of the uniform set.
	tiled *oracle.Inputs
	// bytes are the set's own host memory but its K and V arrays
	// (arrays), its references included.
	bytes int64
	last  uint64
}

// A heldArray is one K or V array of cached sets (inputCache.arrays).
type heldArray struct {
	bytes int64
	users int
}

func newInputCache(limit int64) *inputCache {
	return &inputCache{limit: limit, sets: map[setKey]*cachedSet{}, byInputs: map[*oracle.Inputs]*cachedSet{},
		arrays: map[*float64]*heldArray{}}
}

// A kvArray is one K or V value array of a set, by its first element,
// with the bytes it holds (the values and their device bytes).
type kvArray struct {
	first *float64
	bytes int64
}

// kvArrays lists in's K and V arrays: the arrays a set may share.
func kvArrays(in *oracle.Inputs) []kvArray {
	var out []kvArray
	if len(in.K) > 0 {
		out = append(out, kvArray{&in.K[0], int64(8*len(in.K) + len(in.KBytes))})
	}
	if len(in.V) > 0 {
		out = append(out, kvArray{&in.V[0], int64(8*len(in.V) + len(in.VBytes))})
	}
	return out
}

// hold counts in's K and V arrays as held by one more set and returns
// the bytes that adds to what the cache holds.
func (c *inputCache) hold(in *oracle.Inputs) int64 {
	var added int64
	for _, a := range kvArrays(in) {
		h := c.arrays[a.first]
		if h == nil {
			h = &heldArray{bytes: a.bytes}
			c.arrays[a.first] = h
			added += a.bytes
		}
		h.users++
	}
	return added
}

// release undoes hold and returns the bytes the cache no longer holds.
func (c *inputCache) release(in *oracle.Inputs) int64 {
	var freed int64
	for _, a := range kvArrays(in) {
		if h := c.arrays[a.first]; h != nil {
			if h.users--; h.users == 0 {
				delete(c.arrays, a.first)
				freed += h.bytes
			}
		}
	}
	return freed
}

// set returns the set of key, deriving it with derive on a miss. A set
// larger than the whole cache is derived and not kept.
func (c *inputCache) set(key setKey, derive func() (*oracle.Inputs, error)) (*oracle.Inputs, error) {
	c.tick++
	if e, ok := c.sets[key]; ok {
		c.hits++
		e.last = c.tick
		return e.in, nil
	}
	c.misses++
	in, err := derive()
	if err != nil {
		return nil, err
	}
	e := &cachedSet{key: key, in: in, refs: map[string]oracle.Output{}, bytes: in.OwnBytes(), last: c.tick}
	if inputsBytes(in) > c.limit {
		return in, nil
	}
	c.sets[key], c.byInputs[in] = e, e
	c.used += e.bytes + c.hold(in)
	c.evict()
	return in, nil
}

// longer returns the cached set of key but for the fewest rows more than
// key's, or nil (for a set whose rows nest, oracle.InputSet.RowsNest).
func (c *inputCache) longer(key setKey) *oracle.Inputs {
	var best *cachedSet
	for k, e := range c.sets {
		same := k
		same.rows = key.rows
		if same == key && k.rows > key.rows && (best == nil || k.rows < best.key.rows) {
			best = e
		}
	}
	if best == nil {
		return nil
	}
	c.tick++
	best.last = c.tick
	return best.in
}

// references returns the oracle's output on in at each of launches,
// computing in one call only those the cache does not hold (all of them
// when in is not a cached set).
func (c *inputCache) references(in *oracle.Inputs, launches [][]int) ([]oracle.Output, error) {
	e := c.byInputs[in]
	if e == nil {
		return oracle.References(in, launches)
	}
	out := make([]oracle.Output, len(launches))
	var missing [][]int
	var at []int
	for i, l := range launches {
		if o, ok := e.refs[refsKey(in, l)]; ok {
			out[i] = o
		} else {
			missing, at = append(missing, l), append(at, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	outs, err := oracle.References(in, missing)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = outs[j]
		e.refs[refsKey(in, missing[j])] = outs[j]
		n := int64(8 * (len(outs[j].Out) + len(outs[j].LSE)))
		e.bytes += n
		c.used += n
	}
	c.evict()
	return out, nil
}

// refsKey names a launch's reference: its lengths, on the set as drawn or
// tiled to the capacity.
func refsKey(in *oracle.Inputs, lengths []int) string {
	return fmt.Sprint(in.Tiled, lengths)
}

// tiled returns in marked Tiled (oracle.Inputs.Tiled): for a cached set
// the one such copy the cache keeps, whose references it keeps too.
func (c *inputCache) tiled(in *oracle.Inputs) *oracle.Inputs {
	e := c.byInputs[in]
	if e != nil && e.tiled != nil {
		return e.tiled
	}
	t := *in
	t.Tiled = true
	if e != nil {
		e.tiled = &t
		c.byInputs[&t] = e
	}
	return &t
}

// evict drops the least recently used sets until the cache fits.
func (c *inputCache) evict() {
	for c.used > c.limit && len(c.sets) > 0 {
		var old *cachedSet
		for _, e := range c.sets {
			if old == nil || e.last < old.last {
				old = e
			}
		}
		delete(c.sets, old.key)
		delete(c.byInputs, old.in)
		delete(c.byInputs, old.tiled)
		c.used -= old.bytes + c.release(old.in)
	}
}

// inputsBytes is the host memory of a set's arrays, shared ones included.
func inputsBytes(in *oracle.Inputs) int64 {
	n := in.OwnBytes()
	for _, a := range kvArrays(in) {
		n += a.bytes
	}
	return n
}

// inputCache returns the backend's cache, made on first use.
func (b *Backend) inputCache() *inputCache {
	if b.inputs == nil {
		b.inputs = newInputCache(defaultInputCacheBytes)
	}
	return b.inputs
}

// sharedSet is set as uploadSet keeps it: never the base itself, whose q
// the upload would round for one kernel's q dtype and whose rows every
// other set is copied from; the uniform set at the base's rows shares the
// base's K and V, which no upload writes, with a q of its own.
func sharedSet(in, base *oracle.Inputs) *oracle.Inputs {
	if in != base {
		return in
	}
	c := *in
	c.Q = slices.Clone(in.Q)
	return &c
}

// baseGrain rounds the rows of a base drawn for a type without scales:
// the kernels of a sweep differ in their longest gate length by a few
// split boundaries (1642 rows at one split, 1649 at 8, 1665 at 32 for a
// batch-16 frontier shape), and a kernel whose longest length passes the
// base's rows drew all of it again. A set's bytes do not depend on the
// base's rows (oracle.FromBase: a sequence's first rows do not depend on
// how many are drawn), except a scaled type's, whose scales come from
// every value drawn.
const baseGrain = 256

// baseServes says whether a base drawn with have rows serves a set that
// needs a base of want rows (baseRowsFor): any longer one for a type
// without scales, whose first rows do not depend on how many are drawn;
// only one of exactly those rows for a scaled type, whose scales come
// from every value drawn, so that a set's bytes never depend on which
// kernel of the sweep drew the base before it.
func baseServes(have, want int, s abi.Shape) bool {
	if s.KVType().Scaled {
		return have == want
	}
	return have >= want
}

// baseRowsFor are the rows of the base drawn for a set of rows rows.
func baseRowsFor(rows int, s abi.Shape) int {
	if s.KVType().Scaled {
		return rows
	}
	return min(s.Capacity, (rows+baseGrain-1)/baseGrain*baseGrain)
}
