#!/usr/bin/env bash
# The tuning screen behind h200-frontier2.yaml (timing, gated at one
# length: --no-gates). Each part runs under its own time limit and writes
# its log and results straight into OUTDIR, so a part cut short still
# leaves what it measured (re-run: recorded points are skipped).
#   bash experiments/run-frontier2-tune.sh OUTDIR [SECONDS per part, default 240]
#   -> OUTDIR/t/results.jsonl, OUTDIR/b16.txt, OUTDIR/b1.txt
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier2-tune.sh OUTDIR [SECONDS]}
limit=${2:-240}
spec=experiments/h200-frontier2-tune.yaml
mkdir -p "$out"
timeout "$limit" ./bin/ktune sweep "$spec" -o "$out/t" --no-gates \
  --only "shape=8b-f16-b16|70b-f16-b16|d64-f16-b16,variant=b16|b16-mmac,nkv=2048|8192|32768" > "$out/b16.txt" 2>&1
echo "batch 16: exit $?"
timeout "$limit" ./bin/ktune sweep "$spec" -o "$out/t" --no-gates \
  --only "shape=d64-f16-b1,variant=b1" > "$out/b1.txt" 2>&1
echo "batch 1: exit $?"
grep -h planned "$out"/b16.txt "$out"/b1.txt
