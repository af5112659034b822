#!/usr/bin/env bash
# The tuning screen behind h200-frontier2.yaml (timing only: --no-gates).
#   bash experiments/run-frontier2-tune.sh OUTDIR  ->  OUTDIR/h200-frontier2-tune.jsonl
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier2-tune.sh OUTDIR}
spec=experiments/h200-frontier2-tune.yaml
work=$(mktemp -d)
mkdir -p "$out"
{
  ./bin/ktune sweep "$spec" -o "$work/t" --no-gates --only "shape=8b-f16-b16|70b-f16-b16|d64-f16-b16,variant=b16|b16-mmac,nkv=2048|8192|32768"
  ./bin/ktune sweep "$spec" -o "$work/t" --no-gates --only "shape=d64-f16-b1,variant=b1"
} 2>&1 | grep -v '^\[' > "$out/tune.txt"
grep "planned" "$out/tune.txt"
cp "$work/t/results.jsonl" "$out/h200-frontier2-tune.jsonl"
