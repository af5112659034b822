#!/usr/bin/env bash
# The second frontier on one GPU, in one call: ktune's sweep of
# experiments/h200-frontier2.yaml (the batch-1 variants on the batch-1
# shapes, the batch-16 ones on batch 16) and PyTorch SDPA (cuDNN) at every
# shape and K/V type it takes, right after, on the same GPU.
#   bash experiments/run-frontier2.sh OUTDIR
# writes OUTDIR/h200-frontier2.jsonl, OUTDIR/sdpa-frontier2.jsonl and the
# logs (frontier2.txt, sdpa.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier2.sh OUTDIR}
spec=experiments/h200-frontier2.yaml
work=$(mktemp -d)
mkdir -p "$out"
k=./bin/ktune
shapes() { grep -o "name: [a-z0-9-]*-b$1," "$spec" | sed 's/name: //; s/,//' | paste -sd'|'; }
b1=$(shapes 1)
b16=$(shapes 16)
{
  $k sweep "$spec" -o "$work/f2" --only "shape=$b1,variant=b1-s33-pdl|b1-s64|b1-s33-w4-pdl|b1-s16-w4-pdl"
  $k sweep "$spec" -o "$work/f2" --only "shape=d64-f16-b1|d64-bf16-b1|d64-fp8-b1,variant=b1-s33-pf-pdl"
  $k sweep "$spec" -o "$work/f2" --only "shape=$b16,variant=b16-s8-w4-pdl|b16-s8"
  $k sweep "$spec" -o "$work/f2" --only "shape=$(shapes 16 | tr '|' '\n' | grep '^7b-' | paste -sd'|'),variant=b16-s4-w4-pdl"
  $k sweep "$spec" -o "$work/f2" --only "shape=$(shapes 16 | tr '|' '\n' | grep -E '^(8b|70b)-' | paste -sd'|'),variant=b16-f1-pf"
  $k sweep "$spec" -o "$work/f2" --only "shape=$(shapes 16 | tr '|' '\n' | grep '^d64-' | paste -sd'|'),variant=b16-f1-nr2-pf"
} 2>&1 | grep -v '^\[' > "$out/frontier2.txt"
tail -n 4 "$out/frontier2.txt"
cp "$work/f2/results.jsonl" "$out/h200-frontier2.jsonl"
python3 experiments/sdpa_ref.py --shapes-from "$spec" --backends cudnn --probes cold,graph \
  -o "$out/sdpa-frontier2.jsonl" > "$out/sdpa.txt" 2>&1
tail -n 15 "$out/sdpa.txt"
