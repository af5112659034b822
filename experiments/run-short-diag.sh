#!/usr/bin/env bash
# Where the short-context steps go, next to cuDNN's: Nsight Compute's
# durations of every kernel of one step, caches flushed before each kernel,
# clocks left alone, at nkv 2048 — ktune's best tuning (h200-frontier2.yaml)
# and cuDNN (experiments/sdpa_ref.py) for 64/8/128 at batch 1, and for
# 32/8/128 and 28/4/128 at batch 16.
#   bash experiments/run-short-diag.sh OUTDIR
#   -> OUTDIR/ncu-short-ktune.csv, OUTDIR/ncu-short-cudnn.csv
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-short-diag.sh OUTDIR}
mkdir -p "$out"
work=$(mktemp -d)
k=./bin/ktune
spec=experiments/h200-frontier2.yaml
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=gpu__time_duration.sum,launch__grid_size,launch__block_size,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
prof() { # ONLY: the last launches are the nkv's probe
  timeout 60 "$ncu" --clock-control none --cache-control all --metrics "$metrics" --csv \
    --print-kernel-base function -k regex:'^attn_(partial|combine)$' --launch-count 24 \
    $k sweep "$spec" --only "$1" -o "$work/ncu-$RANDOM" --in-process --no-gates --probes cold --force 2>/dev/null |
    grep '^"' | sed "s|^|\"$1\",|"
}
{
  prof "shape=70b-f16-b1,variant=b1-s33-w4-pdl,nkv=2048"
  prof "shape=8b-f16-b16,variant=b16-f1-pf,nkv=2048"
  prof "shape=7b-f16-b16,variant=b16-s8-w4-pdl,nkv=2048"
} > "$out/ncu-short-ktune.csv"
echo "ncu ktune: $(wc -l < "$out/ncu-short-ktune.csv") lines"
cud() { # SHAPE-NAME: every kernel from the start (setup, flushes, spins
  # and each call's kernels), so that a call's kernels other than the
  # attention one are seen too
  timeout 90 "$ncu" --clock-control none --cache-control all --metrics "$metrics" --csv \
    --print-kernel-base function --launch-count 120 \
    python3 experiments/sdpa_ref.py --shapes-from "$spec" --shape-name "$1" --nkv 2048 --backends cudnn \
    --probes cold --min-samples 10 --max-samples 10 --warmup 1 --budget 0.1 -o "$work/sdpa-$RANDOM.jsonl" 2>/dev/null |
    grep '^"' | sed "s|^|\"$1\",|"
}
{
  cud 70b-f16-b1
  cud 8b-f16-b16
  cud 7b-f16-b16
} > "$out/ncu-short-cudnn.csv"
echo "ncu cudnn: $(wc -l < "$out/ncu-short-cudnn.csv") lines"
