package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/internal/spec"
)

// A Launch is one kernel launch of a point's decode step, resolved: its
// entry point, its geometry at the point's nkv and its arguments in order.
// Every kernel, built-in or an engine's, runs as a list of launches; the
// probe marshals each argument from the signature (probe/marshal.go).
type Launch struct {
	Entry  string
	Grid   [3]int
	Block  [3]int
	Shared int
	Args   []abi.Arg
	// Programmatic launches the kernel with programmatic stream
	// serialization (the variant's pdl: true): it may start before the
	// previous launch of the step ends (cuda.LaunchAttrs).
	Programmatic bool
	// Cluster is the launch's thread-block cluster (the variant's or
	// the launch entry's cluster: evaluated at the point); zero: none.
	Cluster [3]int
	// Metadata is the digest of the Triton metadata the launch's block,
	// shared memory and trailing arguments came from (launchmeta.go);
	// empty: none.
	Metadata string `json:",omitempty"`
	// SMs and BlocksPerSM are the device symbols the launch's grid was
	// evaluated at (devicesyms.go), 0 when it reads neither; BlocksPerSM
	// is also the spec's declared blocks_per_sm where the grid does not
	// read it. The probe refuses the point on a device or kernel that
	// differs.
	SMs         int `json:",omitempty"`
	BlocksPerSM int `json:",omitempty"`
	// BlocksPerSMDeclared says that BlocksPerSM is the spec's launch's
	// blocks_per_sm, the engine's fact, not --blocks-per-sm's assumption:
	// where it came from, for what ktune plan and a refusal say; the
	// value is what is hashed.
	BlocksPerSMDeclared bool `json:",omitempty"`
	// SharedSymbol is the module variable the launch's dynamic shared
	// memory is read from when the module loads (spec.Launch); Shared is
	// then 0 in the plan, and the probe sets it.
	SharedSymbol string `json:",omitempty"`
}

// NonPortableCluster reports whether the launch's cluster holds more
// blocks than the portable size (spec.MaxClusterPortable), which the
// function must be allowed first.
func (l Launch) NonPortableCluster() bool {
	return l.Cluster[0]*l.Cluster[1]*l.Cluster[2] > spec.MaxClusterPortable
}

// DefinePDL is the define a pdl: true variant's kernels are built with,
// so that they call griddepcontrol.
const DefinePDL = "PDL"

// DefineClusterX, DefineClusterY and DefineClusterZ are the defines the
// kernels of a point whose launches run in thread-block clusters are
// built with: the cluster's dimensions, so that a kernel can assert the
// cluster it was written for.
const (
	DefineClusterX = "CLUSTER_X"
	DefineClusterY = "CLUSTER_Y"
	DefineClusterZ = "CLUSTER_Z"
)

// The ABI's signature (kernels/ABI.md), declared once: every built-in and
// every user kernel that declares no launches of its own runs with it.
var (
	// abiPartialArgs are attn_partial's parameters.
	abiPartialArgs = args("q", "k", "v", "positions", "partial", "heads", "kv_heads", "capacity", "scale")
	// abiFusedArgs are the two more that a fused attn_partial takes: it
	// writes out itself, counting its blocks in a zeroed scratch.
	abiFusedArgs = args("out", "counters")
	// abiCombineArgs are attn_combine's parameters.
	abiCombineArgs = args("partial", "out", "heads")
	// abiScaleArgs is the one more that attn_partial takes, last, when
	// the shape's KV type is scaled (fp8e4m3): the f32 [2][kv_heads]
	// scales, K's first. The other types keep the signature they had.
	abiScaleArgs = args("kv_scale")
	// abiSoftcapArgs and abiSinksArgs follow it, in this order, for a
	// shape with a soft-cap or with sinks (kernels/ABI.md, "Paged KV,
	// several query tokens, soft-cap and sinks"): the cap's value and the
	// per-head sink logits, which the kernels built with SOFTCAP and SINKS
	// (abi.ShapeDefines) take.
	abiSoftcapArgs = args("softcap")
	abiSinksArgs   = args("sinks")
	// abiPagedArgs come between kv_scale and softcap for a built-in built
	// with PAGE_SIZE (abi.PagedABIIO): the block table and its row
	// stride.
	abiPagedArgs = args("block_table", "max_pages")
	// abiGrid and abiBlock are the default partial launch, used by user
	// kernels that give no geometry: one warp per (split, head, sequence).
	abiGrid  = []string{spec.Splits, "heads", "batch"}
	abiBlock = []string{"32"}
	// abiCombineGrid and abiCombineBlock: one block per (head, sequence),
	// one thread per dimension.
	abiCombineGrid  = []string{"heads", "batch"}
	abiCombineBlock = []string{"head_dim"}
)

// args parses names of the vocabulary; they are constants of this file,
// so a mistake is a programming error.
func args(names ...string) []abi.Arg {
	out := make([]abi.Arg, len(names))
	for i, n := range names {
		a, err := abi.ParseArg(n)
		if err != nil {
			panic(err)
		}
		out[i] = a
	}
	return out
}

// launchesOf returns the unresolved launches of a variant: its own, or the
// ABI's with the variant's geometry overrides, else its built-in's
// geometry, else the ABI default. scaled says whether the shape's KV type
// has scales, which the ABI's attn_partial then takes as its last
// argument; io is the point's (pointIO), whose pages it takes after them.
func launchesOf(v *spec.Variant, scaled bool, opts abi.Attention, io abi.IO) []spec.Launch {
	if len(v.Launches) > 0 {
		return v.Launches
	}
	partial, combine := "attn_partial", "attn_combine"
	grid, block, shared := v.Grid, v.Block, v.Shared
	fused := false
	if k := v.Builtin; k != nil {
		if k.Partial != "" {
			partial = k.Partial
		}
		if k.Combine != "" {
			combine = k.Combine
		}
		fused = k.Fused
		if len(grid) == 0 && k.Grid != [3]string{} {
			grid = trimEmpty(k.Grid[:])
		}
		if len(block) == 0 && k.Block != [3]string{} {
			block = trimEmpty(k.Block[:])
		}
		if shared == "" {
			shared = k.Shared
		}
	}
	if len(grid) == 0 {
		grid = abiGrid
	}
	if len(block) == 0 {
		block = abiBlock
	}
	p := spec.Launch{Entry: partial, Grid: grid, Block: block, Shared: shared, Args: abiPartialArgs, Cluster: v.Cluster}
	if fused {
		p.Args = append(slices.Clone(abiPartialArgs), abiFusedArgs...)
	}
	if scaled {
		p.Args = append(slices.Clone(p.Args), abiScaleArgs...)
	}
	if io.KVLayout == abi.Paged {
		p.Args = append(slices.Clone(p.Args), abiPagedArgs...)
	}
	if opts.Softcap > 0 {
		p.Args = append(slices.Clone(p.Args), abiSoftcapArgs...)
	}
	if opts.Sinks {
		p.Args = append(slices.Clone(p.Args), abiSinksArgs...)
	}
	if fused {
		return []spec.Launch{p}
	}
	return []spec.Launch{p, {Entry: combine, Grid: abiCombineGrid, Block: abiCombineBlock, Args: abiCombineArgs}}
}

// trimEmpty drops the trailing empty expressions of a built-in's [3]
// geometry: a missing dimension is 1.
func trimEmpty(e []string) []string {
	for len(e) > 0 && e[len(e)-1] == "" {
		e = e[:len(e)-1]
	}
	return e
}

// pointIO is the io of a point of v with defines defs: the variant's
// declared io, else the ABI's, paged for a built-in's point with a
// PAGE_SIZE above 0.
func pointIO(v *spec.Variant, defs map[string]string) abi.IO {
	if v.IO != nil {
		return *v.IO
	}
	if n, err := strconv.Atoi(defs[abi.DefinePageSize]); err == nil && n > 0 && !declared(v) {
		return abi.PagedABIIO
	}
	return abi.ABIIO
}

// pageSize evaluates a paged io's page_size at a point; 0 for the other
// layouts.
func (b *builder) pageSize(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int) (int, error) {
	io := pointIO(v, defs)
	if io.KVLayout != abi.Paged {
		return 0, nil
	}
	_, eval := b.evaluator(v, sh, defs, nkv)
	n, err := eval("io.page_size", io.Paging.PageSize, 1, 1<<20)
	return int(n), err
}

// declared reports whether a variant declares a signature of its own:
// its entries are then C++ name expressions, resolved by NVRTC.
func declared(v *spec.Variant) bool { return len(v.Launches) > 0 }

// signatureText is the canonical text of a point's launches and io, for
// its hash: the entry, geometry and arguments of each launch in order.
func signatureText(pt *Point) string {
	var b strings.Builder
	b.WriteString(pt.IO.HashText() + "\n")
	for _, l := range pt.Launches {
		b.WriteString(l.Entry)
		for _, a := range l.Args {
			b.WriteString(" " + a.String())
		}
		b.WriteString("\n")
	}
	return b.String()
}

// isABI reports whether a point runs the ABI's signature: its hash then
// leaves the signature out, so that the hashes of the ABI kernels'
// recorded results stay what they were before signatures were declared
// (the ABI's entries and geometry are hashed already).
func isABI(pt *Point) bool {
	return pt.IO == abi.ABIIO && !pt.Source.Named && pt.Source.ArtifactKind == ""
}

// Complete gives a point built by hand (a test, a tool), not by Build,
// what the plan would give an ABI kernel at its configuration: the ABI's
// launches at the default geometry (fused when p.Source.Fused), their
// entries, the ABI's io and, when it has none, the default compile flags.
// It goes through the same code as Build, so the ABI's launch stays
// declared in one place.
func Complete(p *Point) error {
	c := &p.Config
	v := &spec.Variant{Name: c.Variant}
	if p.Source.Fused {
		v.Builtin = &catalog.Kernel{Name: c.Kernel, Fused: true}
	}
	sh := spec.Shape{Shape: c.Shape}
	defs := map[string]string{}
	for _, d := range c.Defines {
		defs[d.Name] = d.Value
	}
	b := &builder{s: &spec.Spec{Path: "(a point built by hand)"}}
	_, launches, _, err := b.geometry(v, &sh, defs, c.NKV, c)
	if err != nil {
		return fmt.Errorf("completing point %s: %w", c.Variant, err)
	}
	p.Launches, p.IO = launches, abi.ABIIO
	p.Source.Entries = nil
	for _, l := range launches {
		if !slices.Contains(p.Source.Entries, l.Entry) {
			p.Source.Entries = append(p.Source.Entries, l.Entry)
		}
	}
	if p.Flags == nil {
		p.Flags = compileFlags(v)
	}
	return nil
}

// scratch evaluates the sizes of a variant's named scratch buffers at a
// point, sms at the point's SM count (Point.SMs; 0: none reads it).
func (b *builder) scratch(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv, sms int) ([]abi.ScratchBuf, error) {
	if len(v.Scratch) == 0 {
		return nil, nil
	}
	env, eval := b.evaluator(v, sh, defs, nkv)
	if sms > 0 {
		env[spec.SymSMs] = int64(sms)
	}
	out := make([]abi.ScratchBuf, len(v.Scratch))
	for i, sc := range v.Scratch {
		n, err := eval("scratch."+sc.Name+".bytes", sc.Bytes, 1, 1<<40)
		if err != nil {
			return nil, err
		}
		out[i] = abi.ScratchBuf{Name: sc.Name, Bytes: n, Fill: sc.Fill}
	}
	return out, nil
}
