#!/usr/bin/env bash
# The committed specs the new gates had not yet met on a GPU (the seeds'
# splits, window, staging and multiwarp, and the three engine specs),
# each swept with one probe (cold: the point is the gates, not the
# timing) under a time limit, and every verdict compared with the
# committed results where there are some (verdicts.py).
#   TOTAL_S=300 bash experiments/run-verdicts-rest.sh OUTDIR
# writes OUTDIR/SPEC.jsonl, OUTDIR/SPEC.log and OUTDIR/verdicts.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?OUTDIR}
mkdir -p "$out"
k=./bin/ktune
end=$((SECONDS + ${TOTAL_S:-300}))
args=()
for s in splits window staging multiwarp engine engine-seed engine-frontier; do
  left=$((end - SECONDS))
  if [ "$left" -le 5 ]; then echo "$s: skipped (time limit)"; continue; fi
  t0=$SECONDS
  timeout --signal=INT "$left" $k sweep "experiments/$s.yaml" -o "$out/w-$s" --probes cold > "$out/$s.log" 2>&1 || echo "$s: exit $?"
  echo "$s: $((SECONDS - t0)) s"
  tail -n 3 "$out/$s.log"
  cp "$out/w-$s/results.jsonl" "$out/$s.jsonl" 2>/dev/null
  [ -f "experiments/results/h200/$s.jsonl" ] && args+=("$out/$s.jsonl" "experiments/results/h200/$s.jsonl")
done
python3 experiments/verdicts.py "${args[@]}" > "$out/verdicts.txt" 2>&1
tail -n 30 "$out/verdicts.txt"
