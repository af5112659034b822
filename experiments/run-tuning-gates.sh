#!/usr/bin/env bash
# The tuning searches behind the frontier specs (h200-b16, h200-pdl,
# h200-frontier2-b16, and h200-frontier2-tune at the points
# run-frontier2-tune.sh measured) again under today's gates, one cold
# probe per point: the point is the verdicts, so each status is compared
# with the committed results (experiments/verdicts.py). On a GPU machine
# with a prebuilt bin/ktune:
#   JOBS=4 TOTAL_S=420 bash experiments/run-tuning-gates.sh OUTDIR [JOB ...]
# The specs run side by side (JOBS at a time; their gate times are then no
# cost measurement) under one time limit; run again into the same OUTDIR,
# each sweep resumes where it stopped (OUTDIR/w-SPEC). h200-pdl's
# engine-ptx points need the engine's PTX, built here with nvcc when it is
# on PATH. A JOB is SPEC or SPEC:ONLY, as in the list below (the default).
# Writes OUTDIR/SPEC.log and .jsonl and OUTDIR/verdicts.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-tuning-gates.sh OUTDIR [JOB ...]}
shift
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
if command -v nvcc > /dev/null && [ ! -f experiments/engine/build/d2_engine.ptx ]; then
  mkdir -p experiments/engine/build
  nvcc -arch=sm_90 -ptx -DATTN_SPLITS=32 -o experiments/engine/build/d2_engine.ptx \
    experiments/engine/d2_engine.cu || echo "nvcc failed: h200-pdl's engine-ptx points will fail"
fi
k=./bin/ktune
end=$((SECONDS + ${TOTAL_S:-420}))
jobs=(h200-b16 h200-pdl h200-frontier2-b16
  "h200-frontier2-tune:shape=8b-f16-b16|70b-f16-b16|d64-f16-b16,variant=b16|b16-mmac,nkv=2048|8192|32768"
  "h200-frontier2-tune:shape=d64-f16-b1,variant=b1")
[ $# -gt 0 ] && jobs=("$@")
one() {
  local job=$1 spec only n left
  spec=${job%%:*}
  only=${job#*:}
  [ "$only" = "$job" ] && only=""
  n=$spec
  [ "$spec" = h200-frontier2-tune ] && n=$spec-$(echo "$only" | grep -o 'variant=[a-z0-9|-]*' | tr -c 'a-zA-Z0-9\n-' _)
  left=$((end - SECONDS))
  if [ "$left" -le 10 ]; then echo "$job: not run (time limit)" > "$out/$n.log"; return; fi
  timeout -k 10 --signal=INT "$left" "$k" sweep "experiments/$spec.yaml" -o "$out/w-$n" \
    --probes cold ${only:+--only "$only"} > "$out/$n.log" 2>&1
  echo "exit $?" >> "$out/$n.log"
  cp "$out/w-$n/results.jsonl" "$out/$n.jsonl" 2>/dev/null
}
export -f one
export out k end
printf '%s\n' "${jobs[@]}" | xargs -P "${JOBS:-4}" -I{} bash -c 'one "$@"' _ {}
args=()
for f in "$out"/*.jsonl; do
  spec=$(basename "$f" .jsonl)
  spec=${spec%%-variant*}
  args+=("$f" "experiments/results/h200/$spec.jsonl")
done
python3 experiments/verdicts.py "${args[@]}" > "$out/verdicts.txt" 2>&1
for f in "$out"/*.log; do echo "$(basename "$f"): $(tail -n 2 "$f" | paste -sd' ')"; done
tail -n 30 "$out/verdicts.txt"
