#!/usr/bin/env bash
# Re-run the committed seed experiments and frontier specs with a prebuilt
# bin/ktune, compare every verdict with the committed results, and report
# the gate cost per compiled kernel (records' gate_sec).
#   bash experiments/run-h200-verdicts.sh OUTDIR [TAG]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?OUTDIR}; tag=${2:-run}
work=$(mktemp -d)
mkdir -p "$out"
export XDG_CACHE_HOME=$work/cache
k=./bin/ktune
args=()
for s in slice splits window staging multiwarp h200-frontier h200-fused; do
  t0=$SECONDS
  $k sweep experiments/$s.yaml -o "$work/$s" > "$work/$s.log" 2>&1 || echo "$s: exit $?"
  echo "$s: $((SECONDS - t0)) s"
  tail -n 3 "$work/$s.log"
  args+=("$work/$s/results.jsonl" "experiments/results/h200/$s.jsonl")
done
python3 experiments/verdicts.py "${args[@]}" | tee "$out/verdicts-$tag.txt"
cat "$work"/slice/results.jsonl "$work"/splits/results.jsonl "$work"/window/results.jsonl \
  "$work"/staging/results.jsonl "$work"/multiwarp/results.jsonl > "$out/seeds-$tag.jsonl"
cat "$work"/h200-frontier/results.jsonl "$work"/h200-fused/results.jsonl > "$out/frontier-$tag.jsonl"
