#!/usr/bin/env bash
# h200-frontier2.yaml's measured points (the --only terms of
# run-frontier2.sh: 384 points, 96 compiled kernels) again under today's
# gates, one cold probe each: the point is the verdicts, so each status is
# compared with the committed results (experiments/verdicts.py).
#   TOTAL_S=420 bash experiments/run-frontier2-gates.sh OUTDIR
# The sweeps share one time limit; run again into the same OUTDIR, they
# resume where they stopped (work directory OUTDIR/f2). Writes
# OUTDIR/h200-frontier2.jsonl, frontier2.txt (the sweeps' last lines) and
# verdicts.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier2-gates.sh OUTDIR}
spec=experiments/h200-frontier2.yaml
mkdir -p "$out"
k=./bin/ktune
end=$((SECONDS + ${TOTAL_S:-420}))
shapes() { grep -o "name: [a-z0-9-]*-b$1," "$spec" | sed 's/name: //; s/,//' | paste -sd'|'; }
b1=$(shapes 1)
b16=$(shapes 16)
of() { shapes 16 | tr '|' '\n' | grep -E "$1" | paste -sd'|'; }
sweep() {
  local left=$((end - SECONDS))
  if [ "$left" -le 5 ]; then echo "skipped (time limit): --only $1"; return; fi
  timeout --signal=INT "$left" "$k" sweep "$spec" -o "$out/f2" --probes cold --only "$1"
}
{
  sweep "shape=$b1,variant=b1-s33-pdl|b1-s64|b1-s33-w4-pdl|b1-s16-w4-pdl"
  sweep "shape=d64-f16-b1|d64-bf16-b1|d64-fp8-b1,variant=b1-s33-pf-pdl"
  sweep "shape=$b16,variant=b16-s8-w4-pdl|b16-s8"
  sweep "shape=$(of '^7b-'),variant=b16-s4-w4-pdl"
  sweep "shape=$(of '^(8b|70b)-'),variant=b16-f1-pf"
  sweep "shape=$(of '^d64-'),variant=b16-f1-nr2-pf"
} 2>&1 | grep -v '^\[' > "$out/frontier2.txt"
tail -n 4 "$out/frontier2.txt"
cp "$out/f2/results.jsonl" "$out/h200-frontier2.jsonl"
python3 experiments/verdicts.py "$out/h200-frontier2.jsonl" experiments/results/h200/h200-frontier2.jsonl > "$out/verdicts.txt" 2>&1
tail -n 20 "$out/verdicts.txt"
