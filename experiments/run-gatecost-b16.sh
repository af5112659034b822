#!/usr/bin/env bash
# The gate cost per compiled kernel at batch 16 (NOTES-gates.md, the
# gate-cost tables), on one GPU with nothing else on it: h200-frontier3 at
# nkv 8192, 8b f16 and bf16, two tunings contiguous and at both page
# sizes (12 kernels, one cold probe each), then each record's gate_sec
# and its split (inputs, oracle, uploads, device, host) by K/V form, and
# the verdicts against the committed frontier3 records.
#   SWEEP_S=150 bash experiments/run-gatecost-b16.sh OUTDIR
# writes OUTDIR/results.jsonl, sweep.txt and cost.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-gatecost-b16.sh OUTDIR}
mkdir -p "$out"
k=./bin/ktune
[ -x "$k" ] || make build >/dev/null
timeout --signal=INT "${SWEEP_S:-150}" "$k" sweep experiments/h200-frontier3.yaml -o "$out" --probes cold \
  --only 'shape=8b-f16-b16|8b-bf16-b16,variant=b16-s8-w4-pdl|b16-f1-pf|b16-s8-w4-pdl-pg|b16-f1-pf-pg,nkv=8192' \
  > "$out/sweep.txt" 2>&1
echo "sweep exit $?" >> "$out/sweep.txt"
r=experiments/results/h200/frontier3
cat $r/h200-frontier3.jsonl $r/paged/h200-frontier3-paged.jsonl > "$out/committed.jsonl"
python3 experiments/verdicts.py "$out/results.jsonl" "$out/committed.jsonl" > "$out/cost.txt" 2>&1
cat "$out/cost.txt"
