#!/usr/bin/env bash
# The q_len-4 search (experiments/h200-frontier3-q4.yaml) on one GPU, in
# one call: every point of that spec (the q_len-4 tunings and the q4s-*
# search on the four q_len-4 shapes, nkv 8192 and 32768), after the
# q_len-1 tunings of h200-frontier3 they are held to (1.2x q_len 1, 3x
# faster than four q_len-1 steps; FRONTIER.md), so that the ratios are of
# one GPU and one call.
#   SWEEP_S=480 bash experiments/run-frontier3-q4.sh OUTDIR
# writes OUTDIR/h200-frontier3-q1.jsonl, h200-frontier3-q4.jsonl and
# frontier3-q4.txt; a sweep stopped by the time limit resumes when run
# again into the same OUTDIR.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier3-q4.sh OUTDIR}
mkdir -p "$out"
k=./bin/ktune
[ -x "$k" ] || make build >/dev/null
end=$((SECONDS + ${SWEEP_S:-480}))
# sweep SPEC DIR ONLY
sweep() {
  local left=$((end - SECONDS))
  if [ "$left" -le 0 ]; then echo "skipped (time limit): --only $3"; return; fi
  timeout -k 10 --signal=INT "$left" "$k" sweep "experiments/$1.yaml" -o "$out/$2" --only "$3"
}
{
  sweep h200-frontier3 q1 "shape=7b-f16-b1|8b-f16-b1,variant=b1-s33-pdl|b1-s16-w4-pdl,nkv=8192|32768"
  sweep h200-frontier3 q1 "shape=7b-f16-b16|8b-f16-b16,variant=b16-s8-w4-pdl|b16-f1-pf,nkv=8192|32768"
  sweep h200-frontier3-q4 q4 "shape=7b-f16-b1-q4|8b-f16-b1-q4,variant=b1-q4-s33-pdl|b1-q4g2-s16-pdl|q4s-b1|q4s-b1g2"
  sweep h200-frontier3-q4 q4 "shape=7b-f16-b16-q4|8b-f16-b16-q4,variant=b16-q4-s8|b16-q4g2-f1-pf|q4s-b16|q4s-b16f"
} 2>&1 | grep -v '^\[' > "$out/frontier3-q4.txt"
tail -n 4 "$out/frontier3-q4.txt"
cp "$out/q1/results.jsonl" "$out/h200-frontier3-q1.jsonl"
cp "$out/q4/results.jsonl" "$out/h200-frontier3-q4.jsonl"
