/*
Ktune autotunes, benchmarks and gates split-KV ("flash-decoding") decode
attention kernels.

Usage:

	ktune <command> [arguments]

'ktune help COMMAND' and 'ktune COMMAND -h' print a command's flags and
examples on standard output. 'ktune version' prints the module version,
the git revision it was built from (and whether the tree was modified)
and the Go version.

# Check the machine

	$ ktune doctor

prints the driver, the GPU (SMs, L2, memory, clocks), the NVRTC library it
loaded and the streaming read bandwidth it measured — or exactly which
library is missing, where it looked, and what to install or set
(KTUNE_NVRTC=/path/to/libnvrtc.so.13 or CUDA_HOME).

# Plan and sweep

	$ ktune plan experiments/slice.yaml
	$ ktune plan experiments/slice.yaml --count
	$ ktune sweep experiments/slice.yaml -o out/slice

A spec (internal/spec/doc.go specifies the format, with a complete example)
names the kernel variants, the shapes and the axes. plan prints the points
and the combinations a kernel forbids, without a GPU. sweep compiles each
point with NVRTC for the device, runs the gates (float64 oracle, byte
identity against a declared twin, graph replay safety) and then the probes
(cold L2, hot L2, graph replay), appending one fsync'd record per point to
out/slice/results.jsonl. Interrupt it and run the same command again: the
points already recorded are skipped. --only 'variant=d2,SPLITS=32|64' runs a
subset; --force measures again. --axis nkv=2048,8192 (plan, check, sweep,
tune) replaces an axis's values for one run, keeping each point's hash;
a spec's restrict: list prunes combinations ("SPLITS * NR <= 256") and
plan says how many points each restriction removed.

# Compile without a GPU

	$ ktune check experiments/*.yaml

compiles every distinct kernel of the specs with NVRTC alone, through a
sweep's compile path and cache key, and prints per kernel the verdict,
the build log and what the CUBIN says: registers, local memory, static
and dynamic shared memory, the entry points. It exits 3 when a kernel
does not build, lacks an entry point its launches name, or breaks a
limit a GPU would refuse it for.

# Read the results

	$ ktune report out/slice -o out/slice/report
	$ ktune compare before/results.jsonl after/results.jsonl
	$ ktune compare before after --json
	$ ktune export --format gobench out/slice | benchstat -

report writes tables (terminal, Markdown, CSV), plots and report.md with the
landed kernel and the run's streaming-read rate drawn in. compare matches points and
says, with a Mann-Whitney test, which changes are real and which are noise;
it counts lines it could not read and warns when the two sides come from
different GPUs or drivers. export writes only device, arch, driver and
nvrtc as benchstat configuration, so two runs on one GPU compare.

# Gate a candidate

	$ ktune gate --candidate d2 out/slice
	$ echo $?

exits 0 when the candidate passes its numerics class at every point and is
not significantly slower than the landed kernel beyond the threshold; 3 on
a numerics failure, 4 on a regression, 5 when undecided (too few samples
for the test to reach α, a confidence interval wider than the threshold,
or input lines that could not be read; it says how many samples per side
would decide), 1 when points are missing, 2 on bad input. --json prints a
machine-readable verdict for CI.

# Search, and export a dispatch table

	$ ktune tune experiments/h200-frontier.yaml -o out/frontier --search halving
	$ ktune tune experiments/h200-frontier2-tune.yaml -o out/model --search model
	$ ktune tune --from out/frontier -o out/dispatch
	$ ktune tune --simulate experiments/results/h200/splits.jsonl --search all

tune SPEC measures (grid by default; --search random samples
configurations; --search halving screens every configuration with a few
samples and drops those significantly slower before measuring the rest in
full; --search model fits a Gaussian process to the times measured so far
and times, a batch at a time, the points most likely to improve the
table), then writes dispatch.yaml and dispatch.h: per shape and nkv range,
the fastest configuration that passed its gates, a winner declared only
where the difference is significant. --from exports from results already
measured. --simulate runs strategies over recorded results, no GPU, and
prints how many points each needed to come within 1% and 2% of the best
table.
*/
package main
