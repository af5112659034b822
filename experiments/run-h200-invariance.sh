#!/usr/bin/env bash
# The price of invariance at batch 16 on one GPU: experiments/invariance.yaml's
# batch-16 tuning against its fixed-split-size forms, invariance gated,
# at both batch-16 shapes and nkv >= 8192, then tune --invariant on the
# results; then (REPEAT_F4=1) the 7b points of experiments/h200-frontier4.yaml
# again with energy, for energy's repeatability between two calls.
#   bash experiments/run-h200-invariance.sh OUTDIR
# KTUNE names the binary (default ./bin/ktune).
set -uo pipefail
out=${1:?usage: run-h200-invariance.sh OUTDIR}
k=${KTUNE:-./bin/ktune}
mkdir -p "$out"
work=$(mktemp -d)
timeout --signal=INT "${INV_S:-330}" "$k" sweep experiments/invariance.yaml \
  --only "shape=7b-f16-b16|8b-f16-b16,variant=${INV_VARIANTS:-b16-s8-w4-pdl|fs1024|fs2048}" \
  --axis nkv=8192,32768,131072 -o "$work/inv" -v > "$work/inv.log" 2>&1
tail -n 3 "$work/inv.log"
cp "$work/inv/results.jsonl" "$out/invariance-b16.jsonl"
gzip -c "$work/inv.log" > "$out/invariance.log.gz"
"$k" tune --invariant --from "$out/invariance-b16.jsonl" -o "$work/tune" > "$out/tune-invariant.txt" 2>&1
tail -n 20 "$out/tune-invariant.txt"
if [ -n "${REPEAT_F4:-}" ]; then
  timeout --signal=INT "${REPEAT_S:-150}" "$k" sweep experiments/h200-frontier4.yaml -o "$work/f4r" --energy \
    --only "shape=7b-f16-b1" > "$work/f4r.log" 2>&1
  tail -n 2 "$work/f4r.log"
  cp "$work/f4r/results.jsonl" "$out/h200-frontier4-rep.jsonl"
fi
