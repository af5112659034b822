package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/expr"
	"gopkg.in/yaml.v3"
)

// engineNodes keeps the nodes of a variant's engine keys for the
// positions of validation errors.
type engineNodes struct {
	include  *yaml.Node
	includes []*yaml.Node
	flags    *yaml.Node
	io       *yaml.Node
	launches *yaml.Node
	launch   []launchNodes
	wsize    *yaml.Node // io.workspace
	// psize and splits are io.page_size's and io.split_counts' nodes.
	psize, splits *yaml.Node
	structs       *yaml.Node
	scratch       *yaml.Node
	// scratchBytes are the nodes of each scratch buffer's bytes.
	scratchBytes []*yaml.Node
	// plannedKey and planned are the nodes of the host-planned arrays.
	plannedKey *yaml.Node
	planned    []plannedNodes
	// exprs are the integer expressions of the arguments (in launches and
	// struct fields), with their nodes, checked once the axes are known.
	exprs []argExpr
	// refs are the struct arguments by name, resolved against structs
	// once the whole variant is read.
	refs []structRef
	// structTypes are the C++ types the structs declare (layoutcheck.go).
	structTypes map[string]StructType
}

type argExpr struct {
	src, where string
	node       *yaml.Node
}

type structRef struct {
	arg  *abi.Arg
	node *yaml.Node
}

type launchNodes struct {
	node, entry  *yaml.Node
	grid, block  []*yaml.Node
	shared, args *yaml.Node
	cluster      []*yaml.Node
	kernel       *yaml.Node
	triton       *yaml.Node
	sharedSym    *yaml.Node
}

// engineKey decodes include, flags, io or launches of a variant.
func (d *decoder) engineKey(key, where string, val *yaml.Node, v *Variant, vn *variantNodes) {
	e := &vn.engine
	switch key {
	case "include":
		e.include = val
		l, ok := d.list(val, where, true)
		if !ok {
			return
		}
		for _, n := range l {
			v.Include, e.includes = append(v.Include, d.expandEnv(d.str(n, where), n, where)), append(e.includes, n)
		}
	case "flags":
		e.flags = val
		l, ok := d.list(val, where, true)
		if !ok {
			return
		}
		for _, n := range l {
			f := d.expandEnv(d.str(n, where), n, where) // -I${CUDA_INCLUDE}
			switch {
			case f == "" || strings.ContainsAny(f, " \t\r\n"):
				d.errorf(n, "%s: %q: one NVRTC option per entry, without spaces (write -I dir as -Idir)", where, f)
			case !strings.HasPrefix(f, "-"):
				d.errorf(n, "%s: %q is not an option (NVRTC options start with -)", where, f)
			}
			v.Flags = append(v.Flags, f)
		}
	case "io":
		e.io = val
		v.IO = d.io(val, where, e)
	case "structs":
		e.structs = val
		v.Structs = d.structs(val, where, e)
		v.StructTypes = e.structTypes
	case "scratch":
		e.scratch = val
		v.Scratch = d.scratch(val, where, e)
	case "planned":
		e.plannedKey = val
		v.Planned = d.planned(val, where, e)
	case "launches":
		e.launches = val
		l, ok := d.list(val, where, false)
		if !ok {
			return
		}
		if len(l) == 0 {
			d.errorf(val, "%s: empty list: a step has at least one launch", where)
		}
		for j, n := range l {
			ln, lnodes := d.launch(n, fmt.Sprintf("%s[%d]", where, j), e)
			v.Launches, e.launch = append(v.Launches, ln), append(e.launch, lnodes)
		}
	}
}

var ioKeys = []string{"q", "out", "kv_layout", "partial", "workspace", "page_size", "page_order", "pages", "mask", "split_counts"}

// pageKeys are the io keys of a paged layout only.
var pageKeys = []string{"page_size", "page_order", "pages"}

func (d *decoder) io(n *yaml.Node, where string, e *engineNodes) *abi.IO {
	io := abi.ABIIO
	var layoutNode *yaml.Node
	pageNodes := map[string]*yaml.Node{}
	d.fields(n, where, ioKeys, func(key string, _, v *yaml.Node) {
		k := where + "." + key
		s := d.str(v, k)
		var err error
		switch key {
		case "q":
			io.Q, err = abi.ParseIODtype(s)
		case "out":
			io.Out, err = abi.ParseIODtype(s)
		case "kv_layout":
			io.KVLayout, err = abi.ParseKVLayout(s)
			layoutNode = v
		case "partial":
			io.Partial, err = abi.ParsePartialLayout(s)
		case "workspace":
			io.Workspace, e.wsize = s, v
		case "page_size":
			io.Paging.PageSize, e.psize = s, v
		case "page_order":
			io.Paging.Order, err = abi.ParsePageOrder(s)
		case "pages":
			io.Paging.Pages, err = abi.ParsePageAssign(s)
		case "mask":
			if io.Mask, err = abi.ParseIODtype(s); err == nil && io.Mask == abi.BF16 {
				err = fmt.Errorf("want f16 or f32 (an additive mask of 0 and -inf), got %q", s)
			}
		case "split_counts":
			io.SplitCounts, e.splits = s, v
		}
		if slices.Contains(pageKeys, key) {
			pageNodes[key] = v
		}
		if err != nil {
			d.errorf(v, "%s: %v", k, err)
		}
	})
	if io.KVLayout != abi.Paged {
		for _, key := range pageKeys {
			if v := pageNodes[key]; v != nil {
				d.errorf(v, "%s.%s: only a paged io has pages (kv_layout: paged)", where, key)
			}
		}
		return &io
	}
	if io.Paging.PageSize == "" {
		d.errorf(layoutNode, "%s.kv_layout: paged needs page_size (rows per page: a number, or a define such as PAGE_SIZE)", where)
	}
	if io.Paging.Order == "" {
		io.Paging.Order = abi.PageNHD
	}
	if io.Paging.Pages == "" {
		io.Paging.Pages = abi.PagesShuffled
	}
	return &io
}

var launchKeys = []string{"entry", "grid", "block", "shared", "args", "cluster", "kernel", "triton", "shared_symbol", "blocks_per_sm"}

func (d *decoder) launch(n *yaml.Node, where string, eng *engineNodes) (Launch, launchNodes) {
	l := Launch{Pos: pos(n)}
	ln := launchNodes{node: n}
	seen := d.fields(n, where, launchKeys, func(key string, _, v *yaml.Node) {
		k := where + "." + key
		switch key {
		case "entry":
			l.Entry, ln.entry = strings.TrimSpace(d.str(v, k)), v
			if l.Entry == "" && deref(v).Kind == yaml.ScalarNode {
				d.errorf(v, "%s: empty: an entry names the kernel's function (its name, or a C++ name expression NVRTC resolves)", k)
			}
		case "grid", "block":
			es, ok := d.list(v, k, true)
			if !ok {
				return
			}
			if len(es) < 1 || len(es) > 3 {
				d.errorf(v, "%s: want 1 to 3 expressions (x, y, z), got %d (quote an expression with a comma)", k, len(es))
				return
			}
			for _, e := range es {
				if key == "grid" {
					l.Grid, ln.grid = append(l.Grid, d.str(e, k)), append(ln.grid, e)
				} else {
					l.Block, ln.block = append(l.Block, d.str(e, k)), append(ln.block, e)
				}
			}
		case "shared":
			l.Shared, ln.shared = d.str(v, k), v
		case "kernel":
			l.Kernel, ln.kernel = strings.TrimSpace(d.str(v, k)), v
		case "triton":
			l.Triton, ln.triton = strings.TrimSpace(d.str(v, k)), v
		case "shared_symbol":
			l.SharedSymbol, ln.sharedSym = strings.TrimSpace(d.str(v, k)), v
			if !cIdent.MatchString(l.SharedSymbol) {
				d.errorf(v, "%s: %q is not a symbol name (the variable's name in the module, mangled for a C++ one)", k, l.SharedSymbol)
			}
		case "blocks_per_sm":
			if n, ok := d.integer(v, k); ok {
				if n < 1 {
					d.errorf(v, "%s: want at least 1 (the blocks of the launch's kernel that fit on one SM), got %d", k, n)
				} else {
					l.BlocksPerSM = n
				}
			}
		case "cluster":
			l.Cluster, ln.cluster = d.cluster(v, k)
		case "args":
			ln.args = v
			es, ok := d.list(v, k, false)
			if !ok {
				return
			}
			l.Args = make([]abi.Arg, len(es))
			for j, e := range es {
				l.Args[j] = d.arg(e, fmt.Sprintf("%s[%d]", k, j), eng)
			}
		}
	})
	if ln.sharedSym != nil {
		for _, x := range []struct {
			key  string
			node *yaml.Node
		}{{"shared", ln.shared}, {"triton", ln.triton}} {
			if x.node != nil {
				d.errorf(x.node, "%s.%s: the launch takes its shared memory from shared_symbol %s", where, x.key, l.SharedSymbol)
			}
		}
	}
	if deref(n).Kind == yaml.MappingNode {
		if ln.triton == nil {
			d.require(n, where, seen, "entry", "grid", "block", "args")
		} else {
			d.require(n, where, seen, "entry", "grid", "args")
			for _, x := range []struct {
				key  string
				node *yaml.Node
			}{{"block", seen["block"]}, {"shared", ln.shared}} {
				if x.node != nil {
					d.errorf(x.node, "%s.%s: a launch with triton metadata takes its %s from the metadata (num_warps, shared)", where, x.key, x.key)
				}
			}
		}
	}
	return l, ln
}

// engineKernels checks the engine keys of each variant against its
// kernel: a built-in keeps the ABI's signature, a prebuilt artifact is
// not compiled, include directories exist, and an artifact's entries are
// the symbols in the file.
func (d *decoder) engineKernels(s *Spec, w *where) {
	for i := range s.Variants {
		v, vn := &s.Variants[i], w.variants[i]
		e := &vn.engine
		where := fmt.Sprintf("variants[%d] (%s)", i, v.Name)
		if len(v.Dispatch) > 0 {
			for _, n := range []*yaml.Node{e.include, e.flags, e.io, e.scratch, e.plannedKey, e.structs, e.launches} {
				if n != nil {
					d.errorf(n, "%s: a dispatch variant takes include, flags, io, scratch, structs and launches from its arms' kernels; give the kernel a variant of its own", where)
					break
				}
			}
			continue
		}
		v.Artifact = artifactKind(v.Path)
		if v.Builtin != nil {
			for _, n := range []*yaml.Node{e.include, e.io, e.scratch, e.plannedKey, e.structs, e.launches} {
				if n != nil {
					d.errorf(n, "%s: kernel %s is a built-in, whose headers and signature are the ABI's; include, io, scratch, structs and launches are for a kernel of your own (a path)", where, v.Builtin.Name)
					break
				}
			}
		}
		if v.Artifact != "" {
			for _, n := range []*yaml.Node{e.include, e.flags} {
				if n != nil {
					d.errorf(n, "%s: %s is a prebuilt %s, loaded without NVRTC: include and flags do not apply (build it with them instead)", where, filepath.Base(v.Path), v.Artifact)
					break
				}
			}
		}
		for j, dir := range v.Include {
			p := dir
			if !filepath.IsAbs(p) {
				p = filepath.Join(s.Dir, p)
			}
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				d.errorf(e.includes[j], "%s.include[%d]: %s is not a directory (a path resolves against the spec's directory)", where, j, p)
			}
			v.Include[j] = p
		}
		d.launchFiles(s, v, e, where)
		if len(v.Launches) > 0 {
			for _, n := range []*yaml.Node{vn.shared} {
				if n != nil {
					d.errorf(n, "%s: shared is given per launch under launches", where)
				}
			}
			if len(vn.grid) > 0 || len(vn.block) > 0 {
				n := vn.node
				if len(vn.grid) > 0 {
					n = vn.grid[0]
				} else if len(vn.block) > 0 {
					n = vn.block[0]
				}
				d.errorf(n, "%s: with launches, grid and block are given per launch", where)
			}
		}
		d.resolveStructs(v, e, where)
		d.launchArgs(v, e, where)
		d.plannedArgs(v, e, where)
	}
}

// launchArgs checks what the arguments can only be checked against
// together: the buffers the io declares.
func (d *decoder) launchArgs(v *Variant, e *engineNodes, where string) {
	io := abi.ABIIO
	if v.IO != nil {
		io = *v.IO
	}
	outs := 0
	for j, l := range v.Launches {
		var leaves []abi.Arg
		for _, a := range l.Args {
			leaves = append(leaves, a.Leaves()...)
		}
		for _, a := range leaves {
			if a.IsScratch() {
				if !slices.ContainsFunc(v.Scratch, func(s abi.Scratch) bool { return s.Name == a.Name }) {
					d.errorf(e.launch[j].args, "%s.launches[%d]: scratch:%s is not declared under scratch", where, j, a.Name)
				}
				continue
			}
			switch a.Name {
			case "workspace":
				if io.Workspace == "" {
					d.errorf(e.launch[j].args, "%s.launches[%d]: the workspace argument needs io.workspace (its size in bytes)", where, j)
				}
			case "out":
				outs++
			}
		}
	}
	for _, n := range []*yaml.Node{e.scratch, e.structs} {
		if n != nil && len(v.Launches) == 0 {
			d.errorf(n, "%s: scratch and structs are passed by a variant's own launches, and this one declares none (it runs the ABI's signature)", where)
		}
	}
	if len(v.Launches) > 0 && outs == 0 {
		d.errorf(e.launches, "%s: no launch passes out: the gates compare out with the oracle", where)
	}
}

// launchExprs checks the geometry expressions of variant i's launches,
// and the io's workspace size.
func (d *decoder) launchExprs(s *Spec, i int, w *where) {
	v, e := &s.Variants[i], &w.variants[i].engine
	for j, l := range v.Launches {
		ln := e.launch[j]
		for k, src := range l.Grid {
			d.checkExprWith(s, i, src, ln.grid[k], fmt.Sprintf("launches[%d].grid[%d]", j, k), GridSymbols)
		}
		for k, src := range l.Block {
			d.checkExpr(s, i, src, ln.block[k], fmt.Sprintf("launches[%d].block[%d]", j, k))
		}
		if l.Shared != "" {
			// sms, not blocks_per_sm: the occupancy depends on the shared
			// size, the SM count does not (llama.cpp's combine takes
			// 8 bytes a parallel block, their count sized from the SMs).
			d.checkExprWith(s, i, l.Shared, ln.shared, fmt.Sprintf("launches[%d].shared", j), PointSymbols)
		}
	}
	if v.IO != nil && v.IO.Workspace != "" {
		d.checkExpr(s, i, v.IO.Workspace, e.wsize, "io.workspace")
	}
	if v.IO != nil && v.IO.Paging.PageSize != "" {
		if ex, err := expr.Parse(v.IO.Paging.PageSize); err == nil && contains(ex.Symbols(), NKV) {
			d.errorf(e.psize, "variants[%d] (%s).io.page_size: %q reads nkv: the pages are the cache's, fixed whatever a sequence's length", i, v.Name, v.IO.Paging.PageSize)
		} else {
			d.checkExpr(s, i, v.IO.Paging.PageSize, e.psize, "io.page_size")
		}
	}
	if v.IO != nil && v.IO.SplitCounts != "" {
		// Of each sequence's nkv, which the other expressions may not read.
		d.checkExpr(s, i, v.IO.SplitCounts, e.splits, "io.split_counts")
	}
	for j, sc := range v.Scratch {
		if sc.Bytes != "" {
			d.checkExprWith(s, i, sc.Bytes, e.scratchBytes[j], "scratch."+sc.Name+".bytes", PointSymbols)
		}
	}
	for _, x := range e.exprs {
		// An engine that launches the kernel fresh every step may pass what
		// its host computes from the step's longest sequence (vLLM's eager
		// max_num_partitions); a captured graph replays its arguments
		// unchanged, so a kernel that is captured cannot be given one.
		if ex, err := expr.Parse(x.src); err == nil && contains(ex.Symbols(), NKV) && !s.Variants[i].NeverCaptured {
			d.errorf(x.node, "%s: %q reads nkv: an argument is fixed for the whole step and a captured graph replays it unchanged; the kernel reads the length from positions or seqlens (or, launched fresh every step, say graph: never)", x.where, x.src)
			continue
		}
		d.checkExprWith(s, i, x.src, x.node, strings.TrimPrefix(x.where, fmt.Sprintf("variants[%d].", i)), append(abi.ScalarNames(), PointSymbols...))
	}
}

// twinIO checks that bitwise twins declare the same io and lse: they run
// in one workspace and their outputs are compared byte for byte.
func (d *decoder) twinIO(s *Spec, w *where) {
	io := func(v *Variant) abi.IO {
		if v.IO != nil {
			return *v.IO
		}
		return abi.ABIIO
	}
	for i := range s.Variants {
		v := &s.Variants[i]
		t := s.Variant(v.BitwiseWith)
		if v.BitwiseWith == "" || t == nil {
			continue
		}
		if a, b := io(v), io(t); a != b {
			d.errorf(w.variants[i].bitwise, "variants[%d] (%s): bitwise_with %s, whose io differs (q %s/%s, out %s/%s, kv_layout %s/%s, partial %s/%s): byte identity needs the same buffers in the same dtypes and layouts",
				i, v.Name, t.Name, a.Q, b.Q, a.Out, b.Out, a.KVLayout, b.KVLayout, a.Partial, b.Partial)
		}
		// A declared lse is compared byte for byte too.
		if v.LSE != t.LSE {
			d.errorf(w.variants[i].bitwise, "variants[%d] (%s): bitwise_with %s, whose lse differs (%q/%q): byte identity needs the same outputs",
				i, v.Name, t.Name, v.LSE, t.LSE)
		}
	}
}

// cIdent is a symbol as a module names it.
var cIdent = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// launchFiles resolves the files a variant's launches name against the
// spec's directory: a launch's own kernel must be a prebuilt artifact
// (NVRTC builds one source per variant), and its Triton metadata a JSON.
// Neither has to exist yet: both are build outputs, as a variant's
// artifact is (the plan warns and its points fail until they are built).
func (d *decoder) launchFiles(s *Spec, v *Variant, e *engineNodes, where string) {
	resolve := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(s.Dir, p)
	}
	own := 0
	for j := range v.Launches {
		l, ln := &v.Launches[j], e.launch[j]
		if l.Kernel == "" {
			own++
		} else {
			if k := artifactKind(l.Kernel); k == "" {
				d.errorf(ln.kernel, "%s.launches[%d].kernel: %q is not a prebuilt .ptx, .cubin or .fatbin (a launch of its own file loads it as it is; a source is the variant's kernel)", where, j, l.Kernel)
			} else if strings.ContainsAny(l.Entry, "<>:( ") {
				d.errorf(ln.entry, "%s.launches[%d].entry: %q is a C++ name; a launch's own prebuilt %s names its symbols as they are in the file (the variant's own artifact may name them as C++)", where, j, l.Entry, k)
			}
			l.Kernel = resolve(l.Kernel)
		}
		if l.Triton != "" {
			if !strings.HasSuffix(l.Triton, ".json") {
				d.errorf(ln.triton, "%s.launches[%d].triton: %q is not a .json (the metadata Triton writes beside its CUBIN)", where, j, l.Triton)
			}
			l.Triton = resolve(l.Triton)
		}
	}
	if len(v.Launches) > 0 && own == 0 {
		d.errorf(e.launches, "%s: every launch names a kernel of its own, so the variant's kernel serves none: leave the kernel key off the launch whose file the variant's kernel is", where)
	}
}
