#!/usr/bin/env bash
# Why mma at batch 16 lost to cuDNN at short contexts on the 8-KV-head
# shapes: the tuning screen (h200-frontier2-tune.yaml, batch-16 part) and
# Nsight Compute's view of the launches on both sides — ktune's partial at
# 8 and 4 splits on 32/8/128 and at 8 splits on 28/4/128, and cuDNN's
# kernels on 32/8/128 — all at batch 16, nkv 2048, caches flushed before
# each kernel, clocks left alone.
#   bash experiments/run-b16-diag.sh OUTDIR [SECONDS for the screen, default 300]
#   -> OUTDIR/tune-b16.jsonl, OUTDIR/b16.txt, OUTDIR/ncu-ktune.csv, OUTDIR/ncu-cudnn.csv
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-b16-diag.sh OUTDIR [SECONDS]}
limit=${2:-300}
mkdir -p "$out"
work=$(mktemp -d)
k=./bin/ktune
timeout "$limit" $k sweep experiments/h200-frontier2-tune.yaml -o "$work/t" --no-gates \
  --only "shape=8b-f16-b16|70b-f16-b16|d64-f16-b16,variant=b16|b16-mmac,nkv=2048|8192|32768" 2>&1 |
  grep -v '^\[' > "$out/b16.txt"
echo "screen: exit ${PIPESTATUS[0]}"
cp "$work/t/results.jsonl" "$out/tune-b16.jsonl"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__waves_per_multiprocessor,launch__occupancy_limit_registers,launch__occupancy_limit_warps,launch__occupancy_limit_shared_mem,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max
prof() { # SPEC ONLY: the last launches of attn_partial are the nkv's probe
  timeout 60 "$ncu" --clock-control none --cache-control all --metrics "$metrics" --csv \
    --print-kernel-base function -k regex:'^attn_partial$' --launch-count 12 \
    $k sweep "$1" --only "$2" -o "$work/ncu-$RANDOM" --in-process --no-gates --probes cold --force 2>/dev/null |
    grep '^"' | sed "s|^|\"$2\",|"
}
{
  prof experiments/h200-frontier2.yaml "shape=8b-f16-b16,variant=b16-s8-w4-pdl,nkv=2048"
  prof experiments/h200-frontier2.yaml "shape=7b-f16-b16,variant=b16-s8-w4-pdl,nkv=2048"
  prof experiments/h200-frontier2-tune.yaml "shape=8b-f16-b16,variant=b16,SPLITS=4,WARPS=4,MINROWS=128,nkv=2048"
} > "$out/ncu-ktune.csv"
echo "ncu ktune: $(wc -l < "$out/ncu-ktune.csv") lines"
timeout 120 "$ncu" --clock-control none --cache-control all --metrics "$metrics" --csv \
  --print-kernel-base function --launch-count 150 \
  python3 experiments/sdpa_ref.py --heads 32 --kv-heads 8 --head-dim 128 --kv-dtype f16 --batch 16 \
  --nkv 2048 --backends cudnn --probes cold --min-samples 10 --max-samples 10 --warmup 1 --budget 0.1 \
  -o "$work/sdpa.jsonl" 2>/dev/null | grep '^"' > "$out/ncu-cudnn.csv"
echo "ncu cudnn: $(wc -l < "$out/ncu-cudnn.csv") lines"
