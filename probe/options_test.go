package probe

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// fakeOptions is a fake kernel of a shape with attention options: out
// and lse of every query row in float64 from the buffers as uploaded (q,
// K, V, head_params) and the shape's options, and a planted misuse of
// each. Its partial buffer is opaque (io.partial), as an engine kernel's.
type fakeOptions struct {
	capScaledTwice bool // soft-cap of s·scale
	alibiFlipped   bool // slope·(p − r)
	windowShort    bool // window rows seen, one fewer than window + 1
	sinkIgnored    bool
	causalAhead    bool // query t also sees row p + 1
	lseNatural     bool // ln where log2 is declared
	lseUnwritten   bool // never writes lse
	// The misuses of lse that only a comparison of bytes sees.
	lseNoise     bool // every other launch of the module flips the last bit of lse[0]
	lseByValue   bool // a graph replay writes the lse of the lengths at capture
	lseSkipAfter int  // > 0: from this many launches in a row at the same positions on, lse is left as it is
	lseFirstAddr bool // writes lse where its module's first launch was told to (a pointer kept in the module)
	lseByBatch   bool // in a batch of more than one, flips the last bit of each sequence's first lse (out is right)
	lseOffset    float32
	// Misuses of lse that only the stale-rows gate and the gates past the
	// gate lengths see.
	lseZeroPast  bool // lse's sum takes the first row past the length with a zero weight (0·NaN = NaN)
	lseDriftPast int  // > 0: lse is off by 1 at lengths past this
	lseDriftTo   int  // > 0: ... and short of this
	mlaDotDV     bool // mla: the score over K's first dv channels only
}

// computeOptions runs one launch of a fakeOptions kernel.
func (f *fakeDevice) computeOptions(fk *fakeKernel, o fakeOptions, l fakeLaunch) {
	lse := l.w.lse
	if o.lseFirstAddr {
		if fk.lseAt == 0 {
			fk.lseAt = lse
		}
		lse = fk.lseAt
	}
	if o.lseSkipAfter > 0 {
		if slices.Equal(fk.memoPos, l.pos) {
			fk.streak++
		} else {
			fk.memoPos, fk.streak = slices.Clone(l.pos), 1
		}
		if fk.streak > o.lseSkipAfter {
			lse = 0
		}
	}
	if o.lseUnwritten {
		lse = 0
	}
	if o.lseByValue && l.captured != nil {
		f.attend(o, l, l.pos, true, 0)
		f.attend(o, l, l.captured, false, lse)
	} else {
		f.attend(o, l, l.pos, true, lse)
	}
	if o.lseNoise && fk.launches%2 == 0 && lse != 0 {
		b := f.at(lse)
		binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)^1)
	}
	if s := l.c.Shape; o.lseByBatch && s.Batch > 1 && lse != 0 {
		b, per := f.at(lse), 4*s.Attention.Queries()*s.Heads
		for seq := range s.Batch {
			binary.LittleEndian.PutUint32(b[seq*per:], binary.LittleEndian.Uint32(b[seq*per:])^1)
		}
	}
}

// attend computes the attention of every query row at the lengths pos
// says; it writes out when withOut is set and lse at lseAt unless 0.
func (f *fakeDevice) attend(o fakeOptions, l fakeLaunch, pos []int32, withOut bool, lseAt cuda.DevPtr) {
	s, w := l.c.Shape, l.w
	a := s.Attention
	d, T := s.HeadDim, a.Queries()
	dv := a.VDim(d) // an mla shape's V width; a latent V is K's first dv channels
	get := func(buf []byte, i int) float64 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
	}
	put := func(buf []byte, i int, v float64) {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(v)))
	}
	q, kb, vb, ob := f.at(w.q), f.at(w.k), f.at(w.v), f.at(w.out)
	dots := d
	if o.mlaDotDV {
		dots = dv
	}
	t := s.KVType()
	kpl, vpl := kvPlacements(w, s)
	load := func(buf []byte, b, r, kh, i int) float64 {
		pl := kpl
		if &buf[0] == &vb[0] {
			pl = vpl
		}
		return t.Decode(t.Bits(buf, f.kvElem(fakeModel{}, w, pl, b, r, kh, i)))
	}
	var hp []byte
	if w.headParams != 0 {
		hp = f.at(w.headParams)
	}
	scale := 1 / math.Sqrt(float64(d))
	for b := range s.Batch {
		n := int(pos[b]) + 1
		for tq := range T {
			p := n - T + tq
			lo, hi := 0, p
			if o.causalAhead {
				hi = min(n-1, p+1)
			}
			if a.Window > 0 {
				wl := a.Window
				if o.windowShort {
					wl--
				}
				lo = max(0, p-wl)
			}
			for h := range s.Heads {
				kh := h / s.Group()
				row := (b*T+tq)*s.Heads + h
				var sc []float64
				mx := math.Inf(-1)
				for r := lo; r <= hi; r++ {
					dot := 0.0
					for i := range dots {
						dot += get(q, row*d+i) * load(kb, b, r, kh, i)
					}
					x := dot * scale
					if c := a.Softcap; c > 0 {
						if o.capScaledTwice {
							x *= scale
						}
						x = c * math.Tanh(x/c)
					}
					if a.ALiBi != "" {
						dist := float64(r - p)
						if o.alibiFlipped {
							dist = -dist
						}
						x += get(hp, h) * dist
					}
					sc = append(sc, x)
					mx = math.Max(mx, x)
				}
				sink := math.Inf(-1)
				if a.Sinks && !o.sinkIgnored {
					sink = get(hp, s.Heads+h)
					mx = math.Max(mx, sink)
				}
				sum, acc := math.Exp(sink-mx), make([]float64, dv)
				for j, x := range sc {
					e := math.Exp(x - mx)
					sum += e
					for i := range dv {
						if a.Latent() {
							acc[i] += e * load(kb, b, lo+j, kh, i)
						} else {
							acc[i] += e * load(vb, b, lo+j, kh, i)
						}
					}
				}
				for i := range dv {
					if withOut {
						put(ob, row*dv+i, acc[i]/sum)
					}
				}
				if a.LSE != "" && lseAt != 0 {
					sumL := sum
					if o.lseZeroPast && n < s.Capacity {
						dot := 0.0
						for i := range dots {
							dot += get(q, row*d+i) * load(kb, b, n, kh, i)
						}
						sumL += 0 * math.Exp(dot*scale-mx)
					}
					lse := mx + math.Log(sumL)
					if o.lseDriftPast > 0 && n > o.lseDriftPast && (o.lseDriftTo == 0 || n < o.lseDriftTo) {
						lse++
					}
					if a.LSE == abi.LSELog2 && !o.lseNatural {
						lse /= math.Ln2
					}
					put(f.at(lseAt), row, lse+float64(o.lseOffset))
				}
			}
		}
	}
}

// optionPoint is fakePoint with every attention option the device gates
// take, an opaque partial and lse in log2.
func optionPoint(variant string) *plan.Point {
	p := fakePoint(variant, 100)
	p.Config.Shape.Attention = abi.Attention{Softcap: 5, ALiBi: abi.ALiBiBuffer, Sinks: true, Window: 20, QLen: 3, LSE: abi.LSELog2}
	p.IO = abi.IO{Q: abi.F32, Out: abi.F32, KVLayout: abi.BSHD, Partial: abi.PartialOpaque}
	// lse is allocated when an argument names it.
	a, err := abi.ParseArg("lse")
	if err != nil {
		panic(err)
	}
	p.Launches[1].Args = append(p.Launches[1].Args, a)
	p.GateNKV = append(p.GateNKV, 3, 5, 22, 23, 41)
	p.Hash += "-opt"
	p.GateKey += "-opt"
	return p
}

// TestFakeOptions: a kernel computing every option right passes every
// gate on every set of its shape, the options' own included, with lse
// gated; each planted misuse fails a tolerance gate on out or lse.
func TestFakeOptions(t *testing.T) {
	t.Parallel()
	f := newFakeDevice()
	cases := map[string]fakeOptions{
		"good":          {},
		"cap-twice":     {capScaledTwice: true},
		"alibi-flipped": {alibiFlipped: true},
		"window-short":  {windowShort: true},
		"sink-ignored":  {sinkIgnored: true},
		"causal-ahead":  {causalAhead: true},
		"lse-natural":   {lseNatural: true},
		"lse-unwritten": {lseUnwritten: true},
	}
	for name, o := range cases {
		f.models[name] = fakeModel{options: &o}
	}
	b := fakeBackend(t, f)
	rec := run(t, b, optionPoint("good"))
	if rec.Status != "ok" {
		t.Fatalf("good option kernel: %s %s, failed %v", rec.Status, rec.Error, failedKinds(rec.Gates))
	}
	sets, lse := map[string]bool{}, false
	for _, g := range rec.Gates {
		sets[g.Inputs] = true
		lse = lse || g.Buffer == "lse"
	}
	for _, want := range []string{"sinks", "alibi", "window", "causal"} {
		if !sets[want] {
			t.Errorf("no gate on the %s set", want)
		}
	}
	if !lse {
		t.Error("no gate on lse")
	}
	for name := range cases {
		if name == "good" {
			continue
		}
		rec := run(t, b, optionPoint(name))
		got := strings.Join(failedKinds(rec.Gates), " ")
		if !strings.Contains(got, "tolerance/") {
			t.Errorf("%s: failed %q, want a tolerance gate", name, got)
		}
	}
}

// TestFakeOptionsLSEBytes: lse is an output like out to every gate that
// compares bytes. A kernel right by the oracle whose lse is nondeterministic,
// stale on a graph replay, skipped on a repeated launch, or written into
// the other timed set's buffer fails the gate meant for it, on lse, and
// no tolerance or written gate; a twin whose lse differs in its last bits
// fails the bitwise gate on lse alone.
func TestFakeOptionsLSEBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		o    fakeOptions
		want string   // the kind/inputs that must fail
		only []string // when set, exactly the kinds that fail
	}{
		{"lse-noise", fakeOptions{lseNoise: true}, "determinism/uniform", nil},
		{"lse-by-value", fakeOptions{lseByValue: true}, "replay/uniform", []string{"replay/uniform"}},
		// After the probes: the timed gate and the launch-count check.
		{"lse-skip-repeated", fakeOptions{lseSkipAfter: 8}, "timed/", []string{"launches/", "timed/"}},
		{"lse-first-address", fakeOptions{lseFirstAddr: true}, "timed/", []string{"launches/", "timed/"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = fakeModel{options: &c.o}
			rec := run(t, fakeBackend(t, f), optionPoint(c.name))
			got := failedKinds(rec.Gates)
			if rec.Status != "gate_failed" || !slices.Contains(got, c.want) {
				t.Fatalf("status %s, failed %v: want %s among them", rec.Status, got, c.want)
			}
			if c.only != nil && !slices.Equal(got, c.only) {
				t.Errorf("failed %v, want %v alone", got, c.only)
			}
			for _, g := range rec.Gates {
				if g.Pass {
					continue
				}
				if g.Kind == "tolerance" || g.Kind == "written" || g.Buffer != "lse" {
					t.Errorf("failed %s on %q: %s", g.Kind, g.Buffer, g.Detail)
				}
			}
		})
	}

	f := newFakeDevice()
	f.models["twin"] = fakeModel{options: &fakeOptions{lseOffset: 1e-5}}
	f.models["cand"] = fakeModel{options: &fakeOptions{}}
	p := optionPoint("cand")
	p.Twin = optionPoint("twin")
	p.Config.BitwiseWith = "twin"
	rec := run(t, fakeBackend(t, f), p)
	got := failedKinds(rec.Gates)
	if rec.Status != "gate_failed" || !slices.Contains(got, "bitwise/uniform") {
		t.Fatalf("twin with another lse: %s, failed %v, want bitwise/uniform among them", rec.Status, got)
	}
	for _, g := range rec.Gates {
		if !g.Pass && (g.Kind != "bitwise" || g.Buffer != "lse") {
			t.Errorf("twin with another lse: failed %s on %q: %s", g.Kind, g.Buffer, g.Detail)
		}
	}
}

// TestFakeOptionsLSEPastLengths: lse goes through the stale-rows gate and
// the gates past the gate lengths like out. An lse that takes the first
// row past each length with a zero weight is right on every finite fill
// and fails the stale-rows gate alone, on lse; one that is wrong only past
// the gate lengths fails the tolerance gate at the capacity alone, on lse;
// one that is wrong only at lengths between those the group's gates ran
// (100, 192, 256) passes them and fails a later point's own timed length.
func TestFakeOptionsLSEPastLengths(t *testing.T) {
	// only: want is the one kind/inputs that fails, on lse, at nkv (any
	// when 0), with detail in the failure.
	only := func(t *testing.T, rec results.Record, want string, nkv int, detail string) {
		t.Helper()
		if got := failedKinds(rec.Gates); rec.Status != results.StatusGateFailed || !slices.Equal(got, []string{want}) {
			t.Fatalf("status %s, failed %v: want %s alone", rec.Status, got, want)
		}
		for _, g := range rec.Gates {
			if !g.Pass && (g.Buffer != "lse" || (nkv > 0 && g.NKV != nkv) || !strings.Contains(g.Detail, detail)) {
				t.Errorf("failed %s at nkv %d on %q: %s", g.Kind, g.NKV, g.Buffer, g.Detail)
			}
		}
	}
	t.Run("zero-weight-past-the-length", func(t *testing.T) {
		f := newFakeDevice()
		f.models["zero"] = fakeModel{options: &fakeOptions{lseZeroPast: true}}
		only(t, run(t, fakeBackend(t, f), optionPoint("zero")), "stale/uniform", 0, "rows past each length")
	})
	t.Run("drift-past-the-gate-lengths", func(t *testing.T) {
		f := newFakeDevice()
		f.models["drift"] = fakeModel{options: &fakeOptions{lseDriftPast: 128}}
		only(t, run(t, fakeBackend(t, f), optionPoint("drift")), "tolerance/uniform", 256, "tiled to the capacity")
	})
	t.Run("drift-at-a-timed-length", func(t *testing.T) {
		f := newFakeDevice()
		f.models["window"] = fakeModel{options: &fakeOptions{lseDriftPast: 195, lseDriftTo: 250}}
		b := fakeBackend(t, f)
		if rec := run(t, b, optionPoint("window")); rec.Status != results.StatusOK {
			t.Fatalf("group's first point: %s, failed %v", rec.Status, failedKinds(rec.Gates))
		}
		p := optionPoint("window")
		p.Config.NKV = 200
		p.Hash += "-200"
		only(t, run(t, b, p), "tolerance/uniform", 200, "tiled to the capacity")
	})
}
