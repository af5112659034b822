package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
)

func (b *builder) source(v *spec.Variant) (Source, error) {
	src := Source{Partial: "attn_partial", Combine: "attn_combine"}
	var name, key string
	var read func() ([]byte, error)
	if k := v.Builtin; k != nil {
		name, key, read = k.File, "builtin:"+k.File, func() ([]byte, error) { return fs.ReadFile(b.files, k.File) }
		if k.Partial != "" {
			src.Partial = k.Partial
		}
		if k.Combine != "" {
			src.Combine = k.Combine
		}
		if k.Fused {
			src.Fused, src.Combine = true, ""
		}
	} else {
		name, key, read = filepath.Base(v.Path), "path:"+v.Path, func() ([]byte, error) { return os.ReadFile(v.Path) }
	}
	src.Name = name
	for _, l := range launchesOf(v, false, abi.Attention{}, abi.ABIIO) { // the entries do not depend on the shape
		if l.Kernel == "" && !slices.Contains(src.Entries, l.Entry) {
			src.Entries = append(src.Entries, l.Entry)
		}
	}
	var err error
	if src.Modules, err = b.modules(v); err != nil {
		return Source{}, err
	}
	if v.Artifact != "" {
		src, err := b.artifact(v, src)
		if err == nil && src.Missing == "" {
			src.Missing = b.missingMeta(v)
		}
		return src, err
	}
	src.Missing = b.missingMeta(v)
	text, ok := b.text[key]
	if !ok {
		data, err := read()
		if err != nil {
			return Source{}, fmt.Errorf("reading the source of variant %s (kernel %s): %w", v.Name, v.Kernel, err)
		}
		text = string(data)
		b.text[key] = text
	}
	if declared(v) {
		src.Named, src.NameExprs = true, src.Entries
		src.Partial, src.Combine = v.Launches[0].Entry, ""
		if len(v.Launches) > 1 {
			src.Combine = v.Launches[1].Entry
		}
	}
	src.Text = text
	if len(v.Include) > 0 || v.StdHeaders || len(v.HostHeaders) > 0 {
		var err error
		if src.Text, src.Headers, err = b.external(v, text); err != nil {
			return Source{}, err
		}
		return src, nil
	}
	src.Headers = b.included(text)
	return src, nil
}

// included returns the kernel headers text #includes, directly or through
// another header. Only those go into the source, and so into the hash: a
// change to a header a kernel does not include must not invalidate its
// recorded results. A quoted include that names no kernel header is left
// to NVRTC, which reports it.
func (b *builder) included(text string) map[string]string {
	out := map[string]string{}
	var walk func(string)
	walk = func(t string) {
		for _, inc := range includes(t) {
			if !inc.quoted {
				continue
			}
			if h, ok := b.headers[inc.name]; ok {
				if _, seen := out[inc.name]; !seen {
					out[inc.name] = h
					walk(h)
				}
			}
		}
	}
	walk(text)
	return out
}

// geometry evaluates the launches of a point (launchesOf: the variant's
// own, else the ABI's with its overrides, its built-in's geometry or the
// ABI default) and its workspace size. The first launch's geometry goes
// into cfg.Grid, Block and SharedBytes and the second's into CombineGrid
// and CombineBlock, as the records have always carried them.
func (b *builder) geometry(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int, cfg *results.Config) (*Geometry, []Launch, int64, error) {
	env, eval := b.evaluator(v, sh, defs, nkv)
	var geo *Geometry
	specs := launchesOf(v, sh.KVType().Scaled, sh.Attention, pointIO(v, defs))
	launches := make([]Launch, len(specs))
	for li, ls := range specs {
		prefix := launchPrefix(v, li)
		entry, err := b.expandEntry(v, sh, defs, nkv, ls.Entry)
		if err != nil {
			return nil, nil, 0, err
		}
		l := Launch{Entry: entry, Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}, Args: ls.Args, SharedSymbol: ls.SharedSymbol}
		for i := range 3 {
			if i < len(ls.Grid) {
				sms, bps, err := b.deviceEnv(env, ls.Grid[i], ls.BlocksPerSM)
				if err != nil {
					return nil, nil, 0, b.pointErrorf(v, sh, defs, nkv, "%sgrid[%d]: %w", prefix, i, err)
				}
				l.SMs, l.BlocksPerSM = max(l.SMs, sms), max(l.BlocksPerSM, bps)
				n, err := eval(fmt.Sprintf("%sgrid[%d]", prefix, i), ls.Grid[i], 1, 1<<31-1)
				if err != nil {
					return nil, nil, 0, err
				}
				l.Grid[i] = int(n)
				if li == 0 && geo == nil && readsNKV(ls.Grid[i]) {
					geo = newGeometry(env, ls.Grid)
				}
			}
			if i < len(ls.Block) {
				n, err := eval(fmt.Sprintf("%sblock[%d]", prefix, i), ls.Block[i], 1, 1<<31-1)
				if err != nil {
					return nil, nil, 0, err
				}
				l.Block[i] = int(n)
			}
		}
		if ls.BlocksPerSM != 0 {
			// The spec's, read by the grid or not: the probe checks it.
			l.BlocksPerSM, l.BlocksPerSMDeclared = ls.BlocksPerSM, true
		}
		// A shared size may read sms (the point's, Point.SMs), never
		// blocks_per_sm (the spec refuses it).
		if _, _, err := b.deviceEnv(env, ls.Shared, 0); err != nil {
			return nil, nil, 0, b.pointErrorf(v, sh, defs, nkv, "%sshared: %w", prefix, err)
		}
		n, err := eval(prefix+"shared", ls.Shared, 0, 1<<31-1)
		if err != nil {
			return nil, nil, 0, err
		}
		l.Shared = int(n)
		if ls.Triton != "" {
			if err := b.applyTriton(&l, ls); err != nil {
				return nil, nil, 0, b.pointErrorf(v, sh, defs, nkv, "%slaunch: %w", prefix, err)
			}
		}
		launches[li] = l
	}
	if args := argsReadNKV(specs); args || stepsReadNKV(specs) {
		// More than the first grid follows the step's length (graph:
		// never, which the spec requires of arguments that read nkv).
		if geo == nil {
			geo = newGeometry(env, specs[0].Grid)
		}
		geo.Args = args
		if n, ok := env[spec.SymSMs]; ok {
			// Read by a later launch than the one the geometry was
			// made at: its shared size, evaluated again at each length.
			geo.Symbols[spec.SymSMs] = n
		}
		geo.Steps = make([]StepGeometry, len(specs))
		for li, ls := range specs {
			copy(geo.Steps[li].Grid[:], ls.Grid)
			geo.Steps[li].Shared = ls.Shared
		}
	}
	cfg.Grid, cfg.Block, cfg.SharedBytes = launches[0].Grid, launches[0].Block, launches[0].Shared
	if len(launches) > 1 {
		cfg.CombineGrid, cfg.CombineBlock = launches[1].Grid, launches[1].Block
	} else {
		// One launch (a fused kernel): there is no combine, and a record or
		// a dispatch table that gave one would tell an engine to launch it.
		cfg.CombineGrid, cfg.CombineBlock = [3]int{}, [3]int{}
	}
	var ws int64
	if io := pointIO(v, defs); io.Workspace != "" {
		var err error
		if ws, err = eval("io.workspace", io.Workspace, 1, 1<<40); err != nil {
			return nil, nil, 0, err
		}
	}
	return geo, launches, ws, nil
}

// evaluator returns the symbols of a variant's geometry expressions at one
// shape, define combination and nkv, and eval, which evaluates one of
// them there (an empty one is lowest) and requires lowest..highest; its
// errors name the point (pointErrorf).
func (b *builder) evaluator(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int) (expr.Env, func(what, src string, lowest, highest int64) (int64, error)) {
	env := expr.Env{"heads": int64(sh.Heads), "kv_heads": int64(sh.KVHeads), "head_dim": int64(sh.HeadDim),
		"batch": int64(sh.Batch), "group": int64(sh.Heads / sh.KVHeads), "capacity": int64(sh.Capacity), spec.NKV: int64(nkv)}
	for name, val := range defs {
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			env[name] = n
		}
	}
	return env, func(what, src string, lowest, highest int64) (int64, error) {
		if src == "" {
			src = strconv.FormatInt(lowest, 10)
		}
		x, err := expr.Parse(src)
		var n int64
		if err == nil {
			n, err = x.Eval(env)
		}
		if err == nil && (n < lowest || n > highest) {
			err = fmt.Errorf("%d is outside %d..%d", n, lowest, highest)
		}
		if err != nil {
			return 0, b.pointErrorf(v, sh, defs, nkv, "%s %q: %w", what, src, err)
		}
		return n, nil
	}
}

// pointErrorf is a plan error about one point: the variant's place in the
// spec, then the point (variant, shape, defines, nkv), then the message.
func (b *builder) pointErrorf(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int, format string, args ...any) error {
	return fmt.Errorf("%s:%d:%d: variant %s, shape %s, %s, nkv %d: %w", b.s.Path, v.Pos.Line, v.Pos.Col, v.Name, sh.Name,
		sorted(defs, false).String(), nkv, fmt.Errorf(format, args...))
}

// artifact is the source of a prebuilt PTX, CUBIN or fatbin: loaded as
// it is, its digest standing for its content in the hash and the record,
// nothing to compile and nothing to resolve (the entries are its
// symbols). An artifact is a build output, so the plan accepts one that
// does not exist yet: its points carry no bytes, their hash says
// "missing", and the probe fails them with the path until it is built
// (the build changes the hash, so they then run).
func (b *builder) artifact(v *spec.Variant, src Source) (Source, error) {
	src.ArtifactKind = v.Artifact
	data, err := os.ReadFile(v.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		src.Missing = v.Path
		return src, nil
	case err != nil:
		return Source{}, fmt.Errorf("reading the prebuilt kernel of variant %s: %w", v.Name, err)
	}
	src.Artifact, src.ArtifactSHA256 = data, sha256Hex(data)
	return src, nil
}

// newGeometry is the geometry of a launch whose grid reads nkv: the grid's
// expressions and the other symbols of env.
func newGeometry(env expr.Env, grid []string) *Geometry {
	g := &Geometry{Symbols: map[string]int64{}}
	for k, val := range env {
		if k != spec.NKV {
			g.Symbols[k] = val
		}
	}
	copy(g.Grid[:], grid)
	return g
}

// readsNKV reports whether the expression src reads nkv.
func readsNKV(src string) bool {
	x, err := expr.Parse(src)
	return err == nil && contains(x.Symbols(), spec.NKV)
}

// stepsReadNKV reports whether a launch's shared memory or a grid other
// than the first launch's reads nkv.
func stepsReadNKV(specs []spec.Launch) bool {
	for li, ls := range specs {
		srcs := []string{ls.Shared}
		if li > 0 {
			srcs = append(srcs, ls.Grid...)
		}
		if slices.ContainsFunc(srcs, readsNKV) {
			return true
		}
	}
	return false
}

// argsReadNKV reports whether an argument of a launch (a struct's field or
// a vector's component included) reads nkv.
func argsReadNKV(specs []spec.Launch) bool {
	for _, ls := range specs {
		for _, a := range ls.Args {
			for _, leaf := range a.Leaves() {
				if leaf.IsExpr() && readsNKV(leaf.Value) {
					return true
				}
			}
		}
	}
	return false
}
