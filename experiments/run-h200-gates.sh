#!/usr/bin/env bash
# Gate power and the engine-form landed kernel on a GPU machine with a
# prebuilt bin/ktune (no Go needed there):
#
#   1. experiments/run-defects.sh: the planted defects of
#      experiments/defects.yaml (where each was caught) and the gate cost
#      per compiled kernel on slice.yaml;
#   2. the engine's D2 as nvcc PTX (the landed artifact), then
#      engine-seed.yaml, engine-frontier.yaml and engine.yaml again.
#
# Writes a few files into $OUT (default out/gates): defects.txt,
# engine-landed.jsonl, engine-sweeps.txt and logs.tgz.
#   bash experiments/run-h200-gates.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out/gates}
work=$(mktemp -d)
mkdir -p "$out"
export XDG_CACHE_HOME=$work/cache PATH="$PATH:/usr/local/cuda/bin"
k=./bin/ktune
t0=$SECONDS
bash experiments/run-defects.sh "$work/defects" > "$out/defects.txt" 2>&1
echo "defects: $((SECONDS - t0)) s" | tee -a "$out/defects.txt"

mkdir -p experiments/engine/build
nvcc -arch=sm_90 -ptx -DATTN_SPLITS=32 -o experiments/engine/build/d2_engine.ptx experiments/engine/d2_engine.cu
: > "$out/engine-landed.jsonl"
for s in engine-seed engine-frontier engine; do
  t1=$SECONDS
  $k sweep experiments/$s.yaml -o "$work/$s" > "$work/$s.log" 2>&1
  echo "$s: exit $?, $((SECONDS - t1)) s" >> "$out/engine-sweeps.txt"
  grep -v '^\[' "$work/$s.log" >> "$out/engine-sweeps.txt"
  cat "$work/$s/results.jsonl" >> "$out/engine-landed.jsonl"
done
tar -C "$work" --exclude=cache -czf "$out/logs.tgz" .
echo "all: $((SECONDS - t0)) s"
