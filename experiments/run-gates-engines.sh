#!/usr/bin/env bash
# The new gates, the engine-form kernels and the attention-option kernels
# on one GPU machine, in one call, with a prebuilt bin/ktune (and
# bin/probe.test, bin/cuda.test: `go test -c` of ./probe and ./internal/cuda):
#
#   bash experiments/run-gates-engines.sh OUTDIR
#
# 1. the GPU tests of internal/cuda (parameter info, the VMM hole) and probe;
# 2. experiments/defects.yaml and the seed and frontier specs at nkv 32768
#    (run-defects.sh: where each planted defect was caught, false alarms,
#    gate cost per compiled kernel);
# 3. the engine-form kernels (run-engines.sh: the Triton build, the params
#    struct, byte strides, and the two declarations that must be refused
#    before any launch);
# 4. the attention options: a reference kernel of each and a planted misuse
#    of each (experiments/options/options.yaml);
# 5. the planted defects under compute-sanitizer (memcheck, initcheck);
# 6. experiments/faults.yaml (faults, refusals, the spill budget);
# 7. the gates' host cost on this machine's cores (BenchmarkGateHost).
# Each part runs under its own time limit; OUTDIR gets one tarball-able tree.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-gates-engines.sh OUTDIR}
mkdir -p "$out"
k=./bin/ktune
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ktune-cache}
# part CAP CMD...: CMD under CAP seconds, or under what is left of the
# whole call's TOTAL_S (default 570) if that is less; skipped when none is.
end=$((SECONDS + ${TOTAL_S:-570}))
part() {
  local cap=$1 left=$((end - SECONDS)); shift
  [ "$left" -lt "$cap" ] && cap=$left
  if [ "$cap" -le 5 ]; then echo "skipped (time): $*" >> "$out/parts.txt"; return; fi
  local t0=$SECONDS; timeout --signal=INT "$cap" "$@"; echo "rc $? in $((SECONDS - t0)) s: $*" >> "$out/parts.txt"
}

nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt" 2>&1
(cd internal/cuda && part 60 ../../bin/cuda.test -test.run GPU -test.v) > "$out/gpu-tests-cuda.txt" 2>&1
(cd probe && part 120 ../bin/probe.test -test.run GPU -test.v) > "$out/gpu-tests-probe.txt" 2>&1
SEEDS="slice h200-frontier h200-fused" part 200 bash experiments/run-defects.sh "$out/d" > "$out/defects-run.txt" 2>&1
part 200 bash experiments/run-engines.sh "$out/engines" > "$out/engines-run.txt" 2>&1
part 90 "$k" sweep experiments/options/options.yaml -o "$out/options" > "$out/options.log" 2>&1
part 70 "$k" sweep experiments/defects.yaml -o "$out/san" --sanitize=memcheck,initcheck \
  --only 'variant=d2|mmaf|race|writepast|readpastend|stalenan,nkv=1641' > "$out/sanitize.log" 2>&1
part 40 "$k" sweep experiments/faults.yaml -o "$out/faults" > "$out/faults.log" 2>&1
(cd probe && part 60 ../bin/probe.test -test.run '^$' -test.bench GateHost -test.benchtime 2x) > "$out/gatehost-bench.txt" 2>&1
rm -rf "$out"/*/sass "$out"/*/*/sass "$out"/d/cache
python3 - "$out" <<'PY' | tee "$out/summary-all.txt"
import glob, json, os, sys
out = sys.argv[1]
for f in sorted(glob.glob(f"{out}/*/results.jsonl") + glob.glob(f"{out}/*/*/results.jsonl")):
    name = os.path.relpath(os.path.dirname(f), out)
    print(f"== {name}")
    for l in open(f):
        r = json.loads(l)
        c = r["config"]
        failed = sorted({f"{g['kind']}/{g.get('inputs', '')}" for g in r.get("gates", []) if not g["pass"]})
        print(f"  {c['variant']:<22} nkv {c['nkv']:>6} {r['status']:<12} {' '.join(failed)[:90]} {r.get('error', '')[:110]}")
PY
cat "$out/parts.txt"
