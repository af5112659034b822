#!/usr/bin/env bash
# The engine's D2 as the engine builds it, measured by ktune and by two
# independent instruments, on a GPU machine (an H200; any sm_90 works):
#
#   1. builds the engine kernel's PTX with nvcc (the artifact the landed
#      variant of experiments/engine.yaml loads) and checks its symbols;
#   2. builds tools/enginebench with nvcc and times the kernel with CUDA
#      events at nkv 8192 and 32768;
#   3. sweeps experiments/engine.yaml (engine form by NVRTC, the same PTX
#      through the driver's JIT, the built-in d2; all gated);
#   4. runs `ktune profile` (ncu) on a seed kernel (d2 S32 nkv 32768 of
#      slice.yaml), a frontier kernel (mma-long b1 nkv 32768 of
#      h200-frontier.yaml) and the engine-form kernel at nkv 32768.
#
# From the repository root, with a prebuilt bin/ktune (make build; no Go
# needed here) and the CUDA toolkit (nvcc, ncu) in /usr/local/cuda or on
# PATH. Copies at most 8 files into $OUT (default out/engine-run):
# run.log, enginebench.txt, engine.jsonl, engine-sweep.txt, profile.jsonl
# and the three ncu CSVs. About 5 minutes on an H200.
#
#   bash experiments/run-engine.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out/engine-run}
work=${WORK:-out/engine-work}
mkdir -p "$out" "$work" experiments/engine/build
export PATH="$PATH:/usr/local/cuda/bin"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$work/cache}
k=./bin/ktune
log="$out/run.log"
: > "$log"
say() { echo "== $*" | tee -a "$log"; }
run() { # run LIMIT_S CMD...: a phase, bounded so the whole run fits its slot
  local limit=$1; shift
  echo "\$ $*" >> "$log"
  timeout "$limit" "$@"
}
start=$(date +%s)

say "environment"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -n 2;
  command -v ncu && ncu --version | tail -n 1; $k doctor; } >> "$log" 2>&1

say "1. PTX with nvcc"
ptx=experiments/engine/build/d2_engine.ptx
if run 120 nvcc -arch=sm_90 -ptx -DATTN_SPLITS=32 -o "$ptx" experiments/engine/d2_engine.cu >> "$log" 2>&1; then
  grep -E '^\.(visible )?\.?entry|\.entry' "$ptx" | tee -a "$log"
  # The spec names the kernels by their mangled symbols: they must be here.
  for sym in $(grep -oE 'entry: _Z[A-Za-z0-9_]+' experiments/engine.yaml | sed 's/entry: //'); do
    grep -q "$sym" "$ptx" && echo "symbol $sym: present" >> "$log" || say "symbol $sym: MISSING from the PTX (fix engine.yaml)"
  done
else
  say "nvcc -ptx failed (see run.log); the engine-ptx points will fail to plan"
fi

say "2. enginebench (nvcc + CUDA events)"
if run 90 nvcc -O3 -arch=sm_90 -DATTN_SPLITS=32 -I experiments/engine -o "$work/enginebench" \
    tools/enginebench/enginebench.cu >> "$log" 2>&1; then
  for n in 8192 32768; do
    run 60 "$work/enginebench" --nkv "$n" --samples 100 2>&1 | tee -a "$out/enginebench.txt" "$log"
  done
else
  say "enginebench did not build (see run.log)"
fi

say "3. ktune sweep experiments/engine.yaml"
run 180 $k sweep experiments/engine.yaml -o "$work/engine" --force > "$out/engine-sweep.txt" 2>&1
tail -n 20 "$out/engine-sweep.txt" | tee -a "$log"
cp "$work/engine/results.jsonl" "$out/engine.jsonl" 2>/dev/null

say "4. ktune profile (ncu) on three points"
: > "$out/profile.jsonl"
i=0
for p in "experiments/slice.yaml|variant=d2,SPLITS=32,nkv=32768|d2" \
         "experiments/h200-frontier.yaml|variant=mma-long,shape=7b-b1,nkv=32768|mma" \
         "experiments/engine.yaml|variant=engine,nkv=32768|engine"; do
  IFS='|' read -r sp only name <<< "$p"
  i=$((i + 1))
  rm -rf "$work/profile-$name"
  run 110 $k profile "$sp" --only "$only" -o "$work/profile-$name" --steps 8 2>&1 | tail -n 30 | tee -a "$log"
  cat "$work/profile-$name/profile.jsonl" >> "$out/profile.jsonl" 2>/dev/null
  cp "$work/profile-$name"/ncu-*.csv "$out/ncu-$name.csv" 2>/dev/null
done

say "ktune against enginebench (engine form, nkv 32768; they should agree within 3%)"
if command -v python3 > /dev/null; then
  python3 - "$out/engine.jsonl" "$out/enginebench.txt" <<'PY' 2>&1 | tee -a "$log"
import json, re, sys
cold = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    for p in r.get("probes") or []:
        if p["probe"] == "cold":
            cold[(r["config"]["variant"], r["config"]["nkv"])] = p["summary"]["median"] / 1e3
bench = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"nkv (\d+): median ([\d.]+) us", open(sys.argv[2]).read())}
for n, us in sorted(bench.items()):
    for v in ("engine", "engine-ptx", "d2"):
        if (v, n) in cold:
            print(f"nkv {n}: {v} ktune cold {cold[(v, n)]:.1f} us, enginebench {us:.1f} us, ratio {cold[(v, n)] / us:.3f}")
PY
fi

say "done in $(( $(date +%s) - start )) s; files in $out:"
ls -l "$out" | tee -a "$log"
