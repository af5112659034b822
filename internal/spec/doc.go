// Package spec owns ktune's experiment spec format: a YAML file naming the
// kernel variants, the shapes and the axes to sweep, how to gate and how to
// measure. This comment is the one specification of the format; spec.go
// holds the decoded form, and `ktune plan SPEC` shows what a spec expands
// to without a GPU.
//
// # A complete example
//
// Every key is shown; the comments say which are required and what the
// defaults are. The file internal/spec/testdata/full.yaml is this example
// verbatim (a test keeps the two equal and checks what it decodes to).
//
//	# Optional: the format version, 1 (the only one so far).
//	version: 1
//	# Required. Letters, digits, '.', '_', '-': it names output directories.
//	name: slice
//	# Optional free text, carried into reports.
//	description: R4 against D2 on the 7B decode shape
//
//	# Optional: the configuration the engine ships today, the baseline of
//	# every comparison. The short form `landed: d2` pins no define; the
//	# long form pins defines to one of the values the variant sweeps.
//	landed: {variant: d2, defines: {SPLITS: 32}}
//
//	# Required, at least one. name, heads, kv_heads, head_dim and kv_dtype
//	# are required; batch defaults to 1; capacity (rows allocated per
//	# sequence) defaults to the largest nkv of the axes and the gates.
//	shapes:
//	  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
//	  - name: 7b-long
//	    heads: 28
//	    kv_heads: 4
//	    head_dim: 128
//	    kv_dtype: f32
//	    batch: 2
//	    capacity: 65536
//
//	# Required: nkv (the context lengths timed at every point). Every other
//	# key is a -D define swept as a cartesian product, for every variant
//	# that takes it.
//	axes:
//	  nkv: [1, 512, 2048, 32768]
//	  SPLITS: [16, 32]
//
//	# Required, at least one.
//	variants:
//	  - name: r4
//	    kernel: r4            # a built-in (ktune plan lists them in errors)
//	    defines: {NR: [4, 8]} # variant-local axes; a scalar is a fixed value
//	  - name: d2
//	    kernel: d2
//	    bitwise_with: r4      # numerics class; absent: tolerance class
//	  - name: mine
//	    kernel: kernels/mine.cu  # a user kernel: a path relative to this file
//	    defines: {SPLITS: [64], WARPS: 2}
//	    grid: [SPLITS, heads, batch]   # launch geometry: 1 to 3 expressions
//	    block: [32 * WARPS]
//	    shared: WARPS * (head_dim + 4) * 4
//	    graph: never          # the engine never captures it in a CUDA graph
//	    pdl: true             # programmatic dependent launch of the second kernel
//	    cluster: [2]          # the partial launch in thread-block clusters of 2
//	  - name: hybrid          # a dispatch by context length instead of kernel:
//	    dispatch:             # each nkv runs the first arm whose below exceeds it
//	      - {below: 2048, kernel: d2, defines: {NR: 2}}
//	      - {kernel: r4}      # the last arm has no below: every longer nkv
//	  - name: engine          # an engine's kernel as it is ("Engine kernels" below)
//	    kernel: engine/eng.cu
//	    include: [engine/include]      # its headers, hashed with the point
//	    flags: [-DATTN_SPLITS=SPLITS]  # extra NVRTC options
//	    io: {q: f32, out: f16, kv_layout: bshd, partial: abi}
//	    launches:                      # one decode step, in stream order
//	      - entry: "split_partial<__half, 4>"   # a C++ name expression
//	        grid: [SPLITS, heads, batch]
//	        block: [32]
//	        args: [q, k, v, positions, partial, heads, kv_heads, head_dim, kv_row_stride, pstr, scale]
//	      - entry: split_combine
//	        grid: [heads, batch]
//	        block: [head_dim]
//	        args: [partial, out, heads, head_dim, pstr]
//	  - name: shipped         # a prebuilt PTX, CUBIN or fatbin, loaded as it is;
//	    kernel: engine/eng.ptx  # without launches it runs the ABI's signature
//
//	# Optional, default [cold, hot]. cold: L2 flushed before each sample;
//	# hot: back-to-back launches; graph: partial+combine replayed from a
//	# captured CUDA graph.
//	probes: [cold, hot, graph]
//
//	# Optional; these are the defaults.
//	gates: {nkv: [1, 29, 52, 512, 1641], max_abs: 2e-3, max_rel: 2e-2, nmse: 1e-6, seed: 1}
//	# A KV type may have bounds of its own; the fields it leaves out are
//	# the spec-wide ones: gates: {bf16: {max_abs: 2e-2, nmse: 1e-3}}
//
//	# Optional; these are the defaults. Durations are Go durations ("2s",
//	# "500ms") or plain seconds.
//	measure: {warmup: 3, min_samples: 10, max_samples: 200, max_noise: 0.03, budget: 2s, hot_batch: 20, timeout: 120s}
//
//	# Optional: whole-step figures, for wall-clock projections in reports.
//	engine: {layers: 28, step_ms: 21.0}
//
// # Keys
//
// Unknown keys, repeated keys and values of the wrong type are errors,
// each reported as file:line:col: message; Parse collects every mistake it
// can find in one pass.
//
// name, shapes, axes (with nkv) and variants are required. Names of the
// spec, shapes and variants use letters, digits, '.', '_' and '-'; shape
// and variant names are unique.
//
// A shape has heads, kv_heads and batch from 1 to 65535 (the default
// launch puts heads and batch in grid y and z), heads a multiple of
// kv_heads (query head h reads KV head h / (heads/kv_heads)), head_dim a
// multiple of 4 up to 1024 (partial rows are float4-aligned; the combine
// kernel runs one thread per dimension), kv_dtype f32, f16, bf16 or
// fp8e4m3. fp8e4m3 (OCP E4M3FN: max 448, no infinities) is stored
// quantized, as the engines' fp8 caches are: an element is its decoded
// value times the f32 scale of its (K or V, KV head), from the kv_scale
// buffer ([2][kv_heads], K's scales first). kv_scale: tensor (the
// default) gives the gate inputs one scale per tensor, as the engines'
// per-tensor scales; kv_scale: head a different one for every KV head;
// kv_scale: shared one scale for K and V together (every entry of the
// buffer holds it, so a kernel that reads a single scale for both passes,
// and one that applies K's scale to V is judged on data where that is
// right). kv_scale is an error for the other types. A capacity
// below the largest nkv is an error, and so is a shape whose K and V
// together exceed 1 TiB. Gate lengths above a shape's capacity are dropped
// for that shape.
//
// # Restrictions and --axis
//
// restrict (optional) lists combinations to leave out, each a comparison
// (<=, <, >=, >, ==, !=) of two integer expressions over nkv, the defines
// and the shape symbols (heads, kv_heads, head_dim, batch, group,
// capacity, and q_len: the shape's query tokens per sequence, 1 without
// the option):
//
//	restrict: ["SPLITS * NR <= 256", "SPLITS <= nkv", "GN <= q_len"]
//
// A point is planned only where every restriction holds that reads only
// symbols the point has (one reading WARPS leaves a variant without WARPS
// alone); ktune plan and plan --count say how many points each removed. A
// symbol that is no axis, define or shape symbol is an error, and so is an
// expression that cannot be evaluated at some point (a division by zero),
// at its column.
//
// For one run, plan, check, sweep and tune take --axis NAME=V1,V2 in place
// of an axis's values (nkv=2048,8192 narrows the lengths; values the file
// lacks are planned too). They are checked as the file's values are, their
// mistakes reported at the axis in the file. A shape's default capacity
// still covers the file's own nkv, so a point of the same values keeps
// its hash: a narrowed sweep fills the same results a full one would.
//
// # Attention options
//
// A shape may take options that change what attention computes, as the
// engines' kernels take them; the float64 oracle computes each exactly and
// the built-in kernels refuse them (they compute plain attention). A query
// at position p scores row r as
//
//	s = q·k_r / √head_dim                  the scale, then
//	s = softcap·tanh(s / softcap)          softcap: c (1 to 10000)
//	s = s + slope_h·(r − p)                alibi: standard | buffer
//	r attended iff p − window ≤ r ≤ p      window: left size (≥ 1)
//	w_r = exp(s_r) / (Σ exp(s) + exp(sink_h))   sinks: true
//	out = Σ w_r·v_r;  lse = ln(Σ exp(s) + exp(sink_h))
//
// and the keys are:
//
//	softcap  c > 0: every scaled score is capped, before any bias
//	         (Gemma 2: 50, Grok: 30)
//	alibi    standard: the slopes 2^(−8(h+1)/H) for H heads a power of two
//	         (the interleaved extension otherwise), which the kernel
//	         computes; buffer: an f32 alibi_slopes buffer [heads] that the
//	         gate inputs draw within ×[0.5, 2] of the standard slopes, so
//	         that a kernel computing the formula instead is off
//	sinks    true: an f32 sinks buffer [heads] of logits that join the
//	         denominator with no value row (gpt-oss); drawn in [−2, 2]
//	window   W: the query sees W + 1 rows, itself and the W before
//	         (FlashAttention's window_size_left)
//	q_len    T (1 to 16): T new query tokens per sequence, counted in nkv;
//	         query t sits at p = nkv − T + t and sees rows ≤ p (causal
//	         within the new tokens); q is [batch][T][heads][head_dim], out
//	         [batch][T][heads][dv] and nkv ≥ T
//	mla      {dv, layout}: V rows dv wide (≤ head_dim, K's width: 576 and
//	         512 for DeepSeek's latent cache); layout latent: V is the first
//	         dv channels of every K row and there is no V buffer (a scaled
//	         type then needs kv_scale: shared); split: a V buffer of its own
//
// A variant's lse: ln | log2 declares that the kernel writes the
// log-sum-exp of every query row (f32 [batch][T][heads]) in that base; it
// is gated like out. An idle query row (nkv 0) has lse −Inf.
//
// Error bounds. The oracle is exact to float64 rounding for every option;
// what a correct kernel's output may differ by, beyond plain attention's
// (u = 2^−24, f32's unit roundoff):
//
//   - softcap: d/ds c·tanh(s/c) = 1 − tanh² ≤ 1, so the cap never grows a
//     score's error; its own is c·ε_tanh, largest near saturation, where
//     the capped score is ±c. With tanhf (ε ≤ 2u) that is 2c·u (6e-6 at
//     c = 50), nothing; with the hardware's tanh.approx.f32 (relative
//     error up to 2^−10.99) it is c·2^−10.99, 0.024 at c = 50, which moves
//     a weight by 2.4% and fails the default max_rel of 2e-2. A kernel
//     that uses the approximation must say so with wider gates; the
//     oracle does not excuse it.
//   - alibi: the slopes of a power-of-two head count are powers of two,
//     and slope·(r − p) from the integer difference is exact; otherwise
//     its rounding is u·slope·|r − p|, large only on rows the bias has
//     already weighted to nothing. A kernel that forms slope·r and slope·p
//     apart cancels two terms of up to slope·nkv each: a score error up
//     to 2u·slope·nkv (about 1e-2 at slope 0.7 and 131072 rows) on the
//     rows that matter — the long-context ALiBi inputs catch it.
//   - sinks: exp(sink − m) adds one rounding to the denominator; out
//     shrinks by the sink's weight and max_abs keeps its meaning. A
//     kernel that drops the sink is off by that weight, relative.
//   - window and q_len are masks: no rounding of their own.
//   - mla: a dot product over dk elements accumulates up to dk·u
//     relative error (576·u = 3.4e-5 in f32), the 1/√dk scale included;
//     in f16 (a tensor-core P) the bound is plain attention's.
//   - lse: |lse| ≤ |m| + ln nkv, and an f32 kernel rounds it to
//     u·(|m| + ln nkv) plus its exp/log errors; a base-2 kernel also
//     rounds the log2(e) multiply. lse is judged with the gates' bounds
//     unscaled by the set's V (it is a log, not a weighted V).
//   - kv_scale shared: the scale multiply is one f32 rounding, as for
//     per-tensor scales.
//
// # Defines
//
// Define names are C identifiers. HEAD_DIM, KV_F16 (1 for f16, 0 for
// every other type), KV_BF16 (1, passed for bf16 shapes only) and KV_FP8
// (1, for fp8e4m3 shapes only) come from each shape and cannot be axes; PSTR is fixed by the ABI;
// the expression symbols below cannot be define names. Values are strings,
// written as YAML scalars, one token each; a value may not repeat within
// an axis. SPLITS and NR count something and must be integers ≥ 1.
//
// A user kernel receives every define of the axes and its own. A built-in
// receives SPLITS (part of the ABI), the defines it declares and sets
// nowhere else at their defaults, and the axes it declares; an axis define
// a built-in does not declare is not applied to it and does not multiply
// its points. Naming an undeclared define among a built-in's own defines
// is an error. Every variant needs a value for SPLITS.
//
// A built-in may bound a define or refuse a shape. A value it refuses that
// is written among the variant's own defines is an error; one that comes
// from a global axis, or a shape it refuses, makes the planner skip that
// combination with the reason. Only when a built-in can run no point of
// the sweep at all is the spec refused.
//
// # Expressions
//
// grid, block (1 to 3 entries; missing dimensions are 1) and shared are
// integer expressions: literals, + - * / % with C precedence and
// truncation, unary minus, parentheses, min(a, b), max(a, b),
// cdiv(a, b) = ceil(a/b), and the values engines compute on the host:
// log2(x) = ⌊log₂ x⌋ and ceil_log2(x); fastdiv_m(d), fastdiv_s(d) and
// fastdiv_a(d), the multiplier, shift and add indicator of a uint_fastdiv
// {d, m, s, a} (FlashInfer's paged_kv_t::page_size); fmd_mul(d),
// fmd_add(d) and fmd_shift(d), those of CCCL's
// cuda::fast_mod_div<uint32_t> {divisor, multiplier, add, shift}; and
// wave_fill(tiles, lo, hi, per_wave), the split count from lo to hi whose
// tiles × count blocks fill waves of per_wave blocks best, as llama.cpp's
// launch_fattn picks its parallel blocks
// (internal/expr/hostfuncs.go gives each formula). A struct passes a
// fast-division object as a nested struct of those fields:
//
//	uint_fastdiv:
//	  fields:
//	    - {name: d, arg: "u32:page_size"}
//	    - {name: m, arg: "u32:fastdiv_m(page_size)"}
//	    - {name: s, arg: "u32:fastdiv_s(page_size)"}
//	    - {name: a, arg: "u32:fastdiv_a(page_size)"}
//
// YAML splits a flow list at commas, so an
// expression with a comma is quoted there: grid: ["cdiv(nkv, 64)", heads].
// Their symbols are heads, kv_heads, head_dim,
// batch, group (= heads/kv_heads), capacity, nkv, HEAD_DIM, KV_F16 (KV_BF16,
// KV_FP8 where passed) and the
// variant's defines, which must then be integers. Without overrides a
// variant uses its built-in's geometry; a user kernel uses the ABI's
// default, grid [SPLITS, heads, batch] and block [32] with no dynamic
// shared memory. A grid that reads nkv changes with the context length, so
// a captured CUDA graph cannot replay it: the plan warns and the replay
// gate fails such a kernel.
//
// The grid of a launch entry (under launches) may also read the device:
// sms, its SM count, and blocks_per_sm, the launch's kernel's resident
// blocks per SM at its block and shared memory, for engines that size a
// persistent grid from the device (grid: ["sms * blocks_per_sm"]). A plan
// made without a GPU evaluates them at stated assumptions (ktune plan
// --sms, default the architecture's usual part, 132 for sm_90;
// --blocks-per-sm, default 1), prints them and hashes them; a sweep takes
// sms from its device and refuses, before any launch, a point whose
// kernel's occupancy is not the blocks_per_sm it was planned for.
//
// blocks_per_sm: N (an integer ≥ 1) on a launch entry declares its
// kernel's blocks per SM as the engine's host computes them
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor at the launch's block and
// shared memory): FlashInfer's persistent merge runs 12 on sm_90, its
// decode kernel 8. The launch's grid reads blocks_per_sm at N, whatever
// --blocks-per-sm says (the flag is for launches that declare none; a
// step's launches are different kernels, of different occupancies), and
// ktune plan says which launches took which. It is also an assertion:
// the probe checks it against the kernel on the device, before any
// launch, even where the grid does not read blocks_per_sm (a grid padded
// to 8 * sms declares the 8 it was padded for), and refuses the point
// when the kernel has another, since the engine would then launch or plan
// for another count. ktune check computes the count from the built
// image (internal/occupancy) and fails a launch it does not match, before
// any GPU is needed. A point whose launch declares N hashes as the same
// point planned with --blocks-per-sm N.
//
// sms, not blocks_per_sm, may also be read where an engine's host planner
// sizes its work from the device: a planned array's expressions (count,
// value, length), a scratch buffer's bytes, a launch's shared size and an
// integer argument's expression (TYPE:EXPR, a struct's field, a vector's
// component, a tensor map's entry). FlashInfer's decode plan under CUDA
// graphs pads its work items to its kernel's blocks per SM times the SM
// count, 8 * sms; llama.cpp's combine takes 8 bytes of shared memory for
// each of its parallel blocks, whose count fills the SMs. The plan
// evaluates them at the same assumption as a grid's sms, hashes it with
// the point, and the probe refuses the point on a device of another SM
// count. blocks_per_sm stays a grid's: it is the occupancy of that
// launch's own kernel, checked against the grid it sized, so elsewhere
// the engine's count is written as a number (8 * sms), and the launch
// whose kernel has that count declares it (blocks_per_sm: 8) to have it
// checked.
//
// # Numerics classes
//
// bitwise_with names another variant of the spec: the candidate must be
// byte-identical to it at the same shape, nkv and SPLITS (its other
// defines take the candidate's value when the twin takes that define, else
// the twin's first value). A variant cannot be bitwise_with itself, and
// chains may not loop (a → b → a). Without bitwise_with a variant is in
// the tolerance class, gated against the float64 oracle: every output
// element must satisfy |out − ref| ≤ max_abs + max_rel·|ref| (numpy's
// allclose rule), the normalised squared error Σ(out−ref)²/Σref² must be
// ≤ nmse, and no output may be NaN or Inf.
//
// # Replay safety
//
// An engine captures its decode step in a CUDA graph once and replays it
// while the context grows, so every kernel is gated for replay whatever
// the probes: a pair is captured at a length below every split boundary
// and replayed across the boundaries up to the capacity, each replay
// compared with a fresh launch and with the oracle. A grid expression that
// reads nkv fails that gate outright — a replay keeps the grid of its
// capture — unless the variant says graph: never (the only value): the
// engine launches this kernel fresh every step. Such a variant gets no
// replay gate and no graph probe; its records say so among their waivers,
// and gate and report print it beside the gates that ran.
//
// # Invariance
//
// invariant: [batch, position, arm] (any of the three, in any order) asks
// for the invariance gate: a sequence's output bits must not depend on
// the batch it shares, its place in it, or the dispatch arm that served
// it (deterministic serving, reproducible evaluations, a sampler that
// must match its trainer bit for bit). For a few probe sequences of the
// uniform gate set, at gate lengths (they cross the split boundaries; a
// paged point's first page boundary is added), the gate runs the
// sequence alone at batch 1 and inside a batch of half the shape's
// (batch), inside seeded batches of the shape's size with other
// sequences at other lengths around it (batch), at every position of the
// shape's batch (position: up to 16, the first, the last and seeded
// others beyond), and under every other arm of the variant's dispatch at
// the shape's batch (arm: a dispatch variant only), and compares its out
// rows, and its lse rows when lse is declared, byte for byte with the
// first context's. A difference fails the gate (kind invariance), naming
// the sequence, the two contexts and the first differing element.
//
//	variants:
//	  - {name: fixed, kernel: mma, invariant: [batch, position], defines: {SPLITS: [128], SPLITSIZE: [1024]}}
//
// batch and position need a shape of batch 2 or more (the plan refuses
// the spec otherwise: a sequence alone has nothing to differ from). The
// gate cannot see a batch larger than the shape's (the contexts run in
// the point's buffers), the other input sets, lengths other than the
// probes', or arms that are not the variant's own. Asking for it changes
// the record's gate suite, so a resumed sweep gates those records again.
// Every spec, invariant or not, is also gated for invariance to the
// launch count (the launches gate: timed launches sampled across the
// probes and a run of a few thousand launches, each equal to a fresh
// module's).
//
// pdl: true launches every kernel of a step after the first with
// programmatic stream serialization (cuLaunchKernelEx, programmatic
// dependent launch), as engines chain a decode step's kernels: the next
// kernel may start once the previous one has executed
// griddepcontrol.launch_dependents, so its launch latency hides behind
// the previous kernel. ktune then compiles the kernels with -DPDL=1 (a
// define of the point, shown and hashed like any other); a kernel that
// reads what the previous one wrote must execute griddepcontrol.wait
// first (kernels/combine_wide.cuh does under PDL). A kernel that does not
// is a race the gates catch (determinism, tolerance). A captured graph
// keeps the programmatic edges.
//
// max_registers, no_spills and max_shared are the variant's resource
// budget, as in
//
//	variants:
//	  - {name: mine, kernel: kernels/mine.cu, max_registers: 128, no_spills: true, max_shared: 49152}
//
// each optional, checked for every entry point of every compiled
// kernel of the variant (every arm of a dispatch): max_registers bounds
// the registers per thread (1 to 255), no_spills: true forbids local
// memory (the CUBIN tells a stack frame, not what is in it, so a
// runtime-indexed local array breaks it as a register spill does),
// max_shared bounds static plus dynamic shared memory per block, in bytes.
// ktune check reads them from the CUBIN without a GPU and fails the
// kernel (exit 3); a sweep reads them from the loaded kernel and records
// a point that breaks its budget as over_budget, with what it broke, and
// runs nothing of it. A budget is part of the point's hash. It is a limit
// of the engine's choosing, checked as well as the hardware's own (a
// block over __launch_bounds__, more shared memory or registers than a
// block may have), which ktune check applies to every kernel.
//
// cluster: [x, y, z] launches the step's first kernel (the ABI's partial)
// in thread-block clusters of x×y×z blocks (cuLaunchKernelEx, cluster
// dimension attribute; 1 to 3 entries, missing ones are 1); a variant
// with launches gives cluster per launch entry instead. The blocks of a
// cluster run at the same time and can read and write each other's
// shared memory (distributed shared memory), so a kernel can, say, merge
// the splits of a head within a cluster instead of in a second launch.
// ktune only sets the launch attribute; the kernel does the rest. Each
// entry is an integer ≥ 1 or an expression as for grid, except that it
// cannot read nkv: a kernel's cluster is fixed, and a captured graph keeps
// it. At each point every grid dimension must be a multiple of the
// cluster's (checked at each length the gates launch at, for a grid that
// reads nkv), and a cluster holds at most 8 blocks, the portable size;
// cluster_nonportable: true on the variant allows up to 16 (ktune then
// sets the kernel's non-portable cluster size attribute; sm_90 supports
// it, other GPUs may refuse the launch). A mistake in literal entries is a
// spec error; one that shows only at a point's values is a plan error
// naming the point. The kernels are compiled with -DCLUSTER_X, -DCLUSTER_Y
// and -DCLUSTER_Z set to the cluster (defines of the point, shown and
// hashed like PDL), so a kernel can static_assert the cluster it was
// written for; the launches of a step that have a cluster must then agree
// on it. A dispatch variant takes no cluster. The occupancy a record
// reports (blocks per SM) is for plain launches: a cluster launch may
// place fewer blocks at once.
//
// # Dispatch
//
// An engine often picks its kernel by context length on the host: one warp
// per split below a threshold, four above. A variant expresses that with
// dispatch instead of kernel: a list of arms, each {below: N, kernel:
// NAME, defines: {…}}, the last one without below (the catch-all).
//
//	variants:
//	  - name: hybrid
//	    dispatch:
//	      - {below: 4096, kernel: d2, defines: {NR: 4}}
//	      - {kernel: warp4}
//
// A point at context length nkv runs the first arm whose below exceeds nkv
// (here d2 for nkv < 4096, warp4 from 4096 on), built from that arm's
// kernel and defines as if it were a variant of its own: each arm is its
// own compiled kernel with a static grid, as in an engine that switches
// between captured CUDA graphs at the threshold, so a point's graph replay
// stays within its arm. Its record carries the variant's name and the
// arm's kernel and defines. Each point gates its arm's kernel alone, at the
// usual gate lengths, which may lie beyond the arm's threshold: an arm must
// be correct at every length.
//
// below is an integer ≥ 1 and strictly increases from arm to arm; exactly
// the last arm omits it. An arm's defines are single values that apply to
// it alone (a built-in arm declares them, as for a variant). The variant's
// own defines and the global axes apply to every arm that takes them and
// does not fix them, and multiply the points; combinations that differ
// only in a define the chosen arm does not take make one point. Every arm
// needs a value for SPLITS; a variant define that reaches no arm is an
// error. A dispatch variant cannot have kernel, grid, block or shared, and
// it is in the tolerance class: its arms are different kernels, so it
// cannot be bitwise_with a twin, nor be one. It may be the landed
// variant. `ktune plan` shows each point's arm (hybrid → d2), skips an
// arm's combination its kernel refuses with the arm's range in the
// reason, and warns about an arm no nkv of the axes reaches.
//
// # Engine kernels
//
// A kernel need not be rewritten into the ABI (kernels/ABI.md): a variant
// can run an engine's kernel as the engine builds it, from its own tree.
//
// include lists directories (relative to the spec) whose headers the
// source may include: #include "x" is looked up next to the including
// file and then in these, #include <x> in these, and every header found
// is handed to NVRTC and hashed with the point, so editing one re-measures
// the kernels that include it. A header is the file its #include resolves
// to, keyed by its path from the kernel's directory: one file reached
// under two spellings is one header, two files with one spelling are two
// (ktune rewrites the #include lines NVRTC reads to the keys, line numbers
// unchanged). A header found in none of them (a toolkit header such as
// <cuda_fp16.h>) is left to NVRTC; give it a directory with a flag
// (-I/usr/local/cuda/include) when NVRTC lacks it built in.
//
// std_headers: true gives the kernel ktune's own minimal C and C++
// headers for device code where NVRTC has none (<float.h>, <cfloat>,
// <stdint.h>, <cstdint>, <limits.h>, <climits>, <assert.h>, <cassert>,
// <type_traits>, <algorithm>, <utility>: kernels/nvrtcstd/README.md says
// what each provides); the include directories win over them. NVRTC
// defines assert, std::move and std::forward itself, so those headers
// leave them to it.
//
// flags are extra NVRTC options, one token each (-DNAME=value,
// --use_fast_math, -maxrregcount=64, -arch=sm_90a, which replaces the
// device's architecture, --std=c++20, which replaces ktune's c++17).
// Without forward, ktune passes its -D defines (HEAD_DIM, KV_F16, SPLITS
// and the axes); a kernel that takes its sizes at run time ignores them,
// and a flag may forward one under the engine's own name:
// -DATTN_SPLITS=SPLITS. The plan warns when a define's name is declared
// as an identifier in the kernel's sources (a template parameter int
// SPLITS, which -DSPLITS=32 turns into int 32).
//
// host_headers lists includes of host code (a framework's headers, such
// as torch/all.h) that a device-only compile leaves out: ktune gives each
// as an empty header, by name, and hashes the list.
//
// build gives the engine's own build of the kernel instead of NVRTC's:
// command is its argv, where {out} is the artifact's path (required),
// {dep} a make-style dependency file the command may write (-MD -MF
// {dep} for nvcc: every file it names is hashed with the point), {arch}
// the architecture and {EXPR} an expression over the point's values, an
// axis forwarded by name ("-DPARTITION_SIZE={PARTITION_SIZE}"),
// {instantiate} a C++ file ktune writes (the kernel's source included,
// then the address of every launch's entry, which instantiates a template
// kernel whose engine launcher needs a framework) and {host} a directory
// holding the variant's host_headers as empty files; artifact
// is what {out} holds (cubin, the default; fatbin; ptx). The variant's
// kernel is the build's main source. ktune check and sweeps run the
// command (in the kernel's directory) where its compiler exists, and
// cache the artifact by the command, the compiler's --version and the
// files the dependency output named; ktune plan only looks the cache up.
// The artifact is then loaded as a prebuilt one (its entries symbols or
// C++ names); a build that fails fails its points (compile_failed, the
// command's output in compile.log), and where the compiler is missing
// ktune check says so and does not pass the kernel.
//
//	kernel: ${VLLM_ROOT}/csrc/attention/paged_attention_v2.cu
//	build:
//	  command: [nvcc, -cubin, "-arch={arch}", -O3, -MD, -MF, "{dep}", -o, "{out}", "${VLLM_ROOT}/csrc/attention/paged_attention_v2.cu"]
//
// ${NAME} in a kernel path, an include directory or a build token is the
// environment variable NAME: the root of an engine's tree, given on the
// command line (VLLM_ROOT=/src/vllm ktune check spec.yaml), so that a
// committed spec holds no machine's paths; an unset one is a spec error.
//
// forward seals an engine's kernel: it is compiled with the defines
// forward names and none of ktune's. Each is NAME: VALUE, VALUE an
// integer expression over the geometry symbols and the variant's
// defines, or a define's name (its value passed as it is); never nkv.
// forward: {} passes none. An entry's template arguments may read the
// same values, written {EXPR}, so an axis reaches a template parameter
// under any name and stays sweepable:
//
//	defines: {PARTITION_SIZE: [256, 512]}
//	forward: {}
//	launches:
//	  - entry: "partial<{head_dim}, {PARTITION_SIZE}>"
//
// forward is for a kernel NVRTC (or the variant's build) compiles from
// source: a built-in, a dispatch and a prebuilt file refuse it.
//
// launches replaces the ABI's attn_partial + attn_combine with the
// engine's own step: one launch (a fused kernel), two or more, in stream
// order. Each has an entry, grid and block (1 to 3 expressions, as
// above), shared (bytes of dynamic shared memory; default 0) and args,
// the kernel's parameters in order, and may declare blocks_per_sm (its
// kernel's blocks per SM: "Expressions" above). For a .cu source the
// entry is any C++ name NVRTC can resolve, a template instantiation included
// ("partial<__half, 128, 4>"): ktune asks NVRTC for its symbol, and the
// instantiation needs no explicit mention in the source. Without
// launches a kernel runs the ABI's signature, with the variant's grid,
// block and shared for its partial launch.
//
// args take their values from this vocabulary:
//
//	q, k, v, out     the attention buffers (dtypes and layouts under io)
//	partial          batch × SPLITS × heads slots of head_dim + 4 floats
//	workspace        io.workspace bytes, zeroed once when allocated
//	positions        int32 per sequence: nkv − 1
//	seqlens          int32 per sequence: nkv
//	lse              batch × SPLITS × heads floats (not gated); a variant
//	                 with lse: ln | log2 writes batch × q_len × heads there,
//	                 gated against the oracle
//	alibi_slopes     f32 [heads], the ALiBi slopes (a shape with alibi)
//	sinks            f32 [heads], the sink logits (a shape with sinks)
//	counters         batch × heads unsigned ints, zeroed once; a kernel
//	                 that counts in them leaves them zero when it ends
//	kv_scale         a scaled kv_dtype's f32 [2][kv_heads] scales, K's first
//	k_scale, v_scale its K half and its V half (vLLM's k_scale, v_scale);
//	                 for a shape without scales they hold 1.0 (vLLM
//	                 passes its scale pointers for f16 caches too)
//	heads, kv_heads, head_dim, capacity, batch, group, splits   int32
//	kv_row_stride    elements between rows of one KV head
//	kv_head_stride   elements between KV heads of one row
//	kv_batch_stride  elements between sequences
//	kv_row_bytes, kv_head_bytes, kv_batch_bytes
//	                 the same strides in bytes, int64 (llama.cpp's nb1..nb3)
//	pstr             head_dim + 4, the partial slot stride in floats
//	scale            float 1/sqrt(head_dim)
//	softcap          float, the shape's soft-cap (0 without)
//	window_left      int32, the shape's window (−1 without)
//	q_len, dv        int32, query tokens per sequence (1 without) and the
//	                 value width (head_dim but for mla)
//	TYPE:VALUE       a constant: i32:4, u32:1, i64:0, u64:0, f32:0.5, u8:1
//	                 (an f32 is finite: never NaN or Inf)
//	TYPE:EXPR        an integer expression over the geometry symbols, the
//	                 defines, the integer scalars and sms (the device's SM
//	                 count): "i64:heads * head_dim"
//	                 (never nkv: the step's arguments are fixed); the plan
//	                 evaluates it at every point, and one that overflows 64
//	                 bits, divides by zero or does not fit TYPE (u32:-1,
//	                 "i32:2147483647 * 2") is a file:line:col error
//	null             a null pointer
//	{uint3: [x, y, z]}  a vector by value: int2, uint2, float2, int3,
//	                 uint3, float3, int4, uint4, float4, each component a
//	                 scalar, a literal or an expression
//	{struct: NAME}   a by-value struct declared under the variant's structs
//	scratch:NAME     a named scratch buffer declared under scratch
//	{tensor_map: {...}}  a CUtensorMap by value (128 bytes, 64-aligned)
//
// A tensor_map is encoded over one buffer (of the table, or scratch:NAME)
// by the driver's cuTensorMapEncodeTiled, with its arguments: dtype (u8,
// u16, u32, i32, u64, i64, f16, f32, f64, bf16, f32_ftz, tf32, tf32_ftz;
// kv: the shape's K/V type, fp8 as u8), dims (innermost first, 1 to 5),
// strides (bytes, after the innermost; default packed), box,
// element_strides (default 1), interleave (none, 16b, 32b), swizzle (none,
// 32b, 64b, 128b), l2_promotion (none, 64b, 128b, 256b), oob_fill (none,
// nan); entries are integers or expressions. The driver's rules (box 1 to
// 256, strides multiples of 16 below 2^40, ...) are file:line:col errors,
// of the plan at each point for an expression. Every field is hashed:
//
//	args: [{tensor_map: {buffer: k, dtype: kv, dims: [head_dim, kv_heads, "capacity * batch"], box: [head_dim, 1, 64]}}]
//
// planned declares host-planned arrays, passed as planned:NAME and
// rewritten from the lengths at every gate length and between replays, as
// an engine's planner fills them: per_seq: EXPR (one entry per sequence),
// prefix: EXPR (batch + 1 exclusive prefix sums) or expand: EXPR with
// value: EXPR (for each sequence i, EXPR entries holding value at j), over
// i, j, nkv (the sequence's length), max_nkv (the step's longest), the
// shape, the defines and sms; length (the entries, required for
// expand), pad (the entries past the generated ones, default 0) and type,
// the C type the kernel's pointer reads: i32 (the default), i64, u8 or
// bool (one byte, 0 or 1). A value the type cannot hold is the plan's
// error:
//
//	planned:
//	  o_indptr: {prefix: "cdiv(nkv, CHUNK)"}
//	  kv_tile_indices: {expand: "cdiv(nkv, CHUNK)", value: j, length: "batch * cdiv(capacity, CHUNK)"}
//	  block_valid_mask: {expand: "cdiv(nkv, CHUNK)", value: 1, length: "batch * cdiv(capacity, CHUNK)", type: bool}
//
// scratch declares the engine's own scratch arrays (vLLM's exp_sums,
// max_logits and tmp_out): a mapping of name to bytes (an expression,
// which may read sms) and
// fill, what the buffer holds when the workspace is made: zero (the
// default), poison (the gates' NaN, so that reading an element not
// written this step shows in out), never (not filled by ktune) or a
// constant in every 32-bit word, f32:V, i32:V or u32:V (f32:1 for a scale
// an engine's host sets to 1). A scratch buffer is always passed as
// scratch:NAME, so its name may be a word of the vocabulary when
// shadow: true says so ({bytes: "kv_heads * 4", fill: "f32:1", shadow:
// true} under k_scale keeps vLLM's name). They
// live in the workspace allocation after io.workspace's bytes, each
// 256-byte aligned:
//
//	scratch:
//	  exp_sums: {bytes: "batch * heads * SPLITS * 4", fill: poison}
//	  tmp_out:  {bytes: "batch * heads * SPLITS * head_dim * 4"}
//
// structs declares the by-value parameter structs a launch passes, with
// their C layout: each field has a name and either arg (any argument of
// the vocabulary above, a vector or a struct included) or struct (a nested
// struct), count (a fixed-size array, every element the same value) and
// offset (explicit; default: the next offset of the field's natural
// alignment). size is the struct's sizeof (default: the fields' end
// rounded up to the alignment; a larger size pads with zeros) and align
// its alignment. Field names are distinct, and no struct is larger than
// 32764 bytes; a launch's parameters together take at most 4 KiB, or
// 32764 bytes on sm_90 and later (the plan refuses more at the launch's
// line). One struct may be passed to several launches:
//
//	structs:
//	  params:
//	    size: 96
//	    fields:
//	      - {name: q, arg: q}
//	      - {name: row_stride, arg: "kv_row_stride:i64"}
//	      - {name: grid, arg: {uint3: [SPLITS, heads, batch]}}
//	launches:
//	  - {entry: partial, grid: [SPLITS, heads, batch], block: [32], args: [{struct: params}]}
//
// type names the engine's C++ type a struct stands for (type:
// "flashinfer::BatchDecodeParams<half, half, half, int>"): ktune check
// then compiles a layout probe beside the kernel, with its headers and
// options, and refuses (exit 3) every declared field whose offset or size
// is not the type's (a field's name is the member's; a nested struct that
// names its type too has its fields checked through its member, one
// that does not, its offset and size only: an object of private members
// such as a fast-division one), naming the field, its declared
// offset and its real one; and a declared sizeof or alignof that differs.
// The check needs the source: a prebuilt artifact's structs are not
// probed (ktune check says so).
//
// Before the first launch the probe compares every launch's arguments,
// laid out as the compiler lays out parameters, with the kernel's own
// (cuFuncGetParamInfo, CUDA 12.4 and later): a parameter of another size
// or offset, or another count, fails the point with the parameter named.
//
// A scalar is an int (i32) unless written name:TYPE with TYPE one of i32,
// u32, i64, u64 (capacity:i64 for a size_t parameter); scale is a float.
// The context length is not an argument: a captured CUDA graph replays
// its arguments unchanged while the context grows, so a kernel reads it
// from positions or seqlens on the device. A variant the engine launches
// fresh every step (graph: never) may pass what its host computes from
// the step's longest sequence, an expression over nkv (vLLM's eager
// max_num_partitions, "i32:cdiv(nkv, PARTITION_SIZE)"); its grids and
// shared memory may read nkv too, and the gates launch it with every one
// of them evaluated at the length of each launch.
//
// io declares the buffers: q and out are f32 (default), f16 or bf16;
// kv_layout is bshd ([batch][capacity][kv_heads][head_dim], default) or
// bhsd ([batch][kv_heads][capacity][head_dim]); K and V hold the shape's
// kv_dtype. partial is abi (default: the slots of kernels/ABI.md, which
// the written gate checks and the bitwise gate compares) or opaque
// (scratch the gates ignore). workspace is the workspace's size in bytes,
// an expression. The gates read what io declares: the oracle gate
// compares out in its dtype (q rounded to q's dtype on both sides), the
// written gate poisons out (and ABI partial slots) before each run, and
// bitwise twins, which must declare the same io, compare them byte for
// byte. The replay gate captures every launch of the step.
//
// kv_layout: paged is an engine's paged cache: K and V are one pool of
// pages of page_size rows (a number, or an expression over the defines
// such as PAGE_SIZE; never nkv), each sequence owning cdiv(capacity,
// page_size) of them and the pool one spare page per sequence, filled
// with NaN. page_order is the order within a page: nhd ([page_size]
// [kv_heads][head_dim], the default), hnd ([kv_heads][page_size]
// [head_dim]) or split_x (vLLM's: K [kv_heads][head_dim/x][page_size][x],
// x = 16 bytes of elements; V [kv_heads][head_dim][page_size]). pages is
// shuffled (the default: every page at a seeded random place, so a kernel
// that ignores the table reads another sequence's rows or NaN) or
// identity. A kernel finds its rows through the index buffers
// block_table [batch][max_pages], page_indptr [batch+1], page_indices and
// last_page_len [batch] (int32; SGLang's token pool is page_size 1 with
// page_indptr and page_indices), with the scalars page_size, max_pages,
// num_pages, kv_page_stride and kv_page_bytes; kv_row_stride and
// kv_head_stride are a page's own, and a paged io refuses kv_batch_stride
// (and split_x the row and head strides) at the argument's line. The
// probe writes the index buffers with the positions, at every length a
// gate or probe runs and between graph replays, so a kernel that kept
// them from an earlier step reads the wrong rows. mask: f16 or f32 is the
// dtype of the additive mask buffer ([batch][q_len][capacity], 0 where a
// query token sees a row, -inf elsewhere: lengths as llama.cpp passes
// them; passing mask needs io.mask); split_counts: EXPR is each
// sequence's split count, an expression of its nkv (the split_counts
// buffer, int32 [batch]), at least 1 at every length a point runs (the
// plan checks). split_x's x must divide head_dim. Passing alibi_slopes or
// sinks needs every shape to have the option. The built-in mma
// and mmaf take PAGE_SIZE instead (kernels/ABI.md): above 0 the point runs
// paged, token-major and shuffled, with block_table and max_pages after
// kv_scale.
//
// A kernel whose path ends in .ptx, .cubin or .fatbin is a prebuilt
// artifact, the very file an engine ships: the driver loads it (PTX
// through its JIT) without NVRTC, and its SHA-256 goes into the point's
// hash and its record (compile.artifact). Its entries are written as
// symbols as in the file (the .entry lines of the PTX, or cuobjdump
// -symbols) or as C++ names with their template arguments, spaces aside
// (vllm::paged_attention_v2_reduce_kernel<unsigned short, 128, 128, 512>;
// an enum argument as the demangler writes it,
// (vllm::Fp8KVCacheDataType)0), {EXPR} placeholders included: the plan
// demangles the file's entries and refuses, at the launch's line, a name
// that denotes none (listing the entries of that base name) or several
// (overloads: write the parameter types, f<int>(int*)); the record keeps
// both names (compile.symbols). include and flags do not apply. An
// artifact is a build output, so one that does not exist yet is no spec
// error: the plan warns, and its points fail until it is built.
//
// A launch may name a kernel of its own: kernel: path of a prebuilt
// .ptx, .cubin or .fatbin, whose entry is loaded from that file as a
// module of its own (an engine that builds its partial and its combine
// apart ships two files). The variant's kernel serves the launches that
// name none, at least one. Each file's SHA-256 is hashed with the point;
// ktune check reads each file for the launches taken from it, and the
// fresh-module gate loads every file again.
//
// triton: path of the metadata JSON a Triton build writes beside its
// CUBIN gives a launch what Triton's own launcher would: a block of
// num_warps × 32 threads, shared bytes of dynamic shared memory, and after
// the declared args one null pointer per scratch kind the metadata names
// (global_scratch_size, profile_scratch_size: the trailing parameters
// recent Triton versions append). The launch then gives no block or
// shared, its entry must be the metadata's name, and a kernel whose
// scratch size is not 0 (scratch the launcher would allocate) is refused.
// The JSON's digest is hashed; one not built yet is handled as a missing
// artifact. Triton specializes an integer argument equal to 1 away
// (tt.divisibility aside, it becomes a constant and leaves the
// signature): build a kernel for ktune with such arguments in
// do_not_specialize, or the declared args no longer match.
//
// shared_symbol: NAME takes a launch's dynamic shared memory from a
// __device__ or __constant__ integer of its module (4 or 8 bytes), as an
// engine that fixes the size at build time keeps it: the probe reads it
// (cuModuleGetGlobal and a copy) once the modules are loaded, before any
// launch, and records it; the launch then gives no shared. The name is
// hashed, the value through the module's bytes.
//
// include, io and launches are for kernels of your own; a built-in keeps
// the ABI's. A dispatch variant takes none of these keys.
//
// # Gates and measurement
//
// gates.nkv lists the context lengths the gates run at (each ≥ 1; the
// planner adds the split boundaries of each point), seed seeds the random
// inputs. Every length runs on five input sets (uniform; peaked, with a
// dominant key at each chunk's first and last row; large scores and V;
// subnormal V, f16 subnormals for f16 and bf16 and e4m3 subnormal codes
// for fp8e4m3; K with outlier channels), each set walking the lengths
// in its own order (ascending, descending, shuffled); on uniform data each
// launch is repeated and must give the same bytes, and once on a freshly
// loaded module. max_abs is for |V| ≤ 1 and scales with the largest |V|
// of a set. The bounds apply to every shape unless gates has a key named
// after the shape's kv_dtype (f32, f16, bf16, fp8e4m3), a map of max_abs,
// max_rel and nmse that override the spec-wide bounds for the shapes of
// that type: fp8's rounding (1/16 relative) is far coarser than f16's. An
// fp8e4m3 input set chooses its own scales (amax/448 of its values, per
// tensor or per head), so a kernel that applies K's scale to V or one
// head's scale to another fails.
//
// gates.inputs records the kernel owner's decisions about single input
// sets, each with a reason (required): bounds of the set's own, used as
// written (not scaled by the set's |V|; a bound left out is the point's),
// or skip: true, the set does not apply to the kernel (never the uniform
// set, which carries the determinism, stale-rows and fresh-module gates):
//
//	gates:
//	  inputs:
//	    subnormal: {max_abs: 2e-6, nmse: 0.1, reason: "tmp_out is f16, as vLLM keeps it"}
//	    outliers: {skip: true, reason: "the engine clamps K upstream"}
//
// A waiver is hashed with the point, listed in its record (waivers),
// named by every gate judged under it (a gate's waiver) and in the gate
// log, so a pass reached under one never reads as a plain pass.
//
// gates.stale declares what the engine's cache holds in the rows past
// each sequence's length, with a reason (required). The stale-rows gate
// writes NaN, ±Inf and ±the KV type's largest finite value there and
// requires the outputs to be the same to the bit; a kernel that reads
// past the length by design and masks those rows by their scores
// (llama.cpp's, whose cache is cleared at allocation) fails it on NaN
// and Inf alone. rows: finite (the only value) says the cache never holds
// NaN or Inf there: the gate then writes large finite values alone (±max
// and ±max/2 of the KV type; fp8e4m3 also ±240), and still requires
// every output bit to be the same:
//
//	gates:
//	  stale: {rows: finite, reason: "the cache is cleared at allocation; cells past the length hold zeros or earlier rows"}
//
// Like a waiver, the declaration is hashed with the point, listed in its
// record (waivers) and named by every stale gate it judged (the gate's
// waiver), so a finite-only pass never reads as the full one.
//
// measure: warmup ≥ 0 launches before the first sample; between
// min_samples ≥ 1 and max_samples samples, stopping once the interquartile
// range is within max_noise (a fraction in (0, 1)) of the median or when
// budget runs out; hot_batch ≥ 1 launches per hot or graph sample; timeout
// bounds a whole point, gates included. engine (layers ≥ 1 and step_ms >
// 0, both required when present) lets reports project kernel time onto a
// decode step.
//
// The landed configuration must name a variant of the spec and pin only
// defines it sweeps, to values it sweeps, so that it is a point of the
// plan. A sweep may not exceed one million points.
package spec
