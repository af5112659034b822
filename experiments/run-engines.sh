#!/usr/bin/env bash
# The engine-form kernels of experiments/engines on a GPU machine (an
# H200; any sm_90 works), in about four minutes:
#
#   1. builds the Triton decode kernel (engines/triton/build.py: two
#      CUBINs and Triton's metadata JSON, into engines/triton/build), and
#      the SGLang-style stage-2 kernel into a CUBIN of its own with nvcc
#      (engines/build/sglang_stage2.cubin);
#   2. sweeps every spec of experiments/engines that plans, except the
#      refused-*.yaml ones, each gated and timed with a short budget;
#   3. sweeps each refused-*.yaml (a declaration that cannot match its
#      kernel) and fails unless every point was refused before any launch:
#      recorded as an error saying the declared arguments do not match the
#      kernel, with no gate and no probe.
#
# From the repository root, with bin/ktune built (make build) and Triton,
# PyTorch and a GPU for step 1. Writes into OUT (default out/engines-run):
# run.log, and per spec SPEC/results.jsonl and SPEC-sweep.txt. Exits 1 if
# a refused spec was not refused or the Triton build failed.
#
#   bash experiments/run-engines.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/engines-run}
mkdir -p "$out"
# The CUBIN cache stays out of OUT, which should hold only what is read.
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-out/engines-cache}
k=./bin/ktune
log="$out/run.log"
: > "$log"
status=0
say() { echo "== $*" | tee -a "$log"; }
run() { # run LIMIT_S CMD...: a phase, bounded so the whole run fits its slot
  local limit=$1; shift
  echo "\$ $*" >> "$log"
  timeout "$limit" "$@"
}
[ -x "$k" ] || make build >> "$log" 2>&1 || { say "no bin/ktune and make build failed"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c 'import triton, torch; print("triton", triton.__version__, "torch", torch.__version__)'; } >> "$log" 2>&1

say "1. Triton build"
if ! run 150 python3 experiments/engines/triton/build.py experiments/engines/triton/build --splits 16 2>&1 | tee -a "$log"; then
  say "the Triton build failed (see run.log): the triton points fail as not built"
  status=1
fi

say "1b. SGLang stage 2: a CUBIN of its own (nvcc), as the engine ships its stage-2 kernel"
mkdir -p experiments/engines/build
if ! run 120 nvcc -arch=sm_90 -cubin -o experiments/engines/build/sglang_stage2.cubin kernels/testdata/sglang_stage2.cu >> "$log" 2>&1; then
  say "the stage-2 build failed (see run.log): the sglang points fail as not built"
  status=1
fi

say "2. sweeps"
for spec in experiments/engines/*.yaml; do
  name=$(basename "$spec" .yaml)
  case "$name" in refused-*) continue ;; esac
  if ! $k plan "$spec" > /dev/null 2>> "$log"; then
    say "$name: does not plan, skipped"
    continue
  fi
  say "$name"
  run 120 $k sweep "$spec" -o "$out/$name" --force > "$out/$name-sweep.txt" 2>&1
  tail -n 25 "$out/$name-sweep.txt" | tee -a "$log"
done

say "3. declarations that must be refused"
for spec in experiments/engines/refused-*.yaml; do
  name=$(basename "$spec" .yaml)
  run 60 $k sweep "$spec" -o "$out/$name" --force > "$out/$name-sweep.txt" 2>&1
  if python3 - "$out/$name/results.jsonl" >> "$log" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
# Refused before any launch: an error naming the mismatch, and neither a
# gate nor a probe recorded.
bad = [r for r in recs if r.get("status") != "error" or "do not match the kernel" not in r.get("error", "")
       or r.get("gates") or r.get("probes")]
for r in recs:
    print(r.get("status"), r.get("error", ""))
sys.exit(1 if bad or not recs else 0)
PY
  then
    say "$name: refused before any launch"
  else
    say "$name: NOT REFUSED as it must be (see run.log and $name-sweep.txt)"
    status=1
  fi
done
exit $status
