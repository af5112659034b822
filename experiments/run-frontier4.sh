#!/usr/bin/env bash
# The fourth frontier's first call on one GPU: ktune's sweep of
# experiments/h200-frontier4.yaml (mmafw against mma and mmaf at batch 1,
# energy per step on every point), PyTorch SDPA (cuDNN) at the same shapes
# right after, then Nsight Compute's kernel durations at 7b nkv 32768
# (caches flushed, clocks left alone) for the one-launch forms and the
# two-launch reference.
#   bash experiments/run-frontier4.sh OUTDIR
# KTUNE and SPEC name the binary and the spec (default ./bin/ktune and
# experiments/h200-frontier4.yaml), SDPA the reference script. Writes
# OUTDIR/h200-frontier4.jsonl, sdpa-frontier4.jsonl, ncu-frontier4.csv
# and the logs (frontier4.log, sdpa.txt).
set -uo pipefail
out=${1:?usage: run-frontier4.sh OUTDIR}
k=${KTUNE:-./bin/ktune}
spec=${SPEC:-experiments/h200-frontier4.yaml}
sdpa=${SDPA:-experiments/sdpa_ref.py}
mkdir -p "$out"
work=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
timeout --signal=INT "${SWEEP_S:-300}" "$k" sweep "$spec" -o "$work/f4" --energy -v > "$out/frontier4.log" 2>&1
grep -m 3 'energy' "$out/frontier4.log"
tail -n 4 "$out/frontier4.log"
cp "$work/f4/results.jsonl" "$out/h200-frontier4.jsonl"
# REPEAT: the 7b points again in a second sweep of the same call, for the
# spread of time and energy between two runs.
if [ -n "${REPEAT:-}" ]; then
  timeout --signal=INT "${REPEAT_S:-150}" "$k" sweep "$spec" -o "$work/f4r" --energy --only "shape=7b-f16-b1" > "$out/frontier4-rep.log" 2>&1
  tail -n 2 "$out/frontier4-rep.log"
  cp "$work/f4r/results.jsonl" "$out/h200-frontier4-rep.jsonl"
fi
timeout "${SDPA_S:-120}" python3 "$sdpa" --shapes-from "$spec" --shape-name 7b-f16-b1,8b-f16-b1 --backends cudnn \
  --probes cold,graph -o "$out/sdpa-frontier4.jsonl" > "$out/sdpa.txt" 2>&1
tail -n 4 "$out/sdpa.txt"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=gpu__time_duration.sum,launch__grid_size,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
prof() {
  timeout "${NCU_S:-45}" "$ncu" --clock-control none --cache-control all --metrics "$metrics" --csv \
    --print-kernel-base function -k regex:'^attn_(partial|combine)$' --launch-count "${NCU_N:-24}" \
    "$k" sweep "$spec" --only "$1" -o "$work/ncu-$RANDOM" --in-process --no-gates --probes cold --force 2>/dev/null |
    grep '^"' | sed "s|^|\"$1\",|"
}
{
  prof "shape=7b-f16-b1,variant=b1-s33-pdl,nkv=32768"
  [ -n "${NCU_ALL:-1}" ] && prof "shape=7b-f16-b1,variant=b1-w33,nkv=32768"
} > "$out/ncu-frontier4.csv"
echo "ncu: $(wc -l < "$out/ncu-frontier4.csv") lines"
