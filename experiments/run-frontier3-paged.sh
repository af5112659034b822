#!/usr/bin/env bash
# The third frontier's paged forms on one GPU, in one call: each paged
# tuning of experiments/h200-frontier3.yaml (PAGE_SIZE 16 and 64,
# shuffled token-major pages through block_table) next to the same tuning
# contiguous, both in this sweep, so that "within 3%" compares numbers of
# one GPU and one run; then the q_len-4 forms not yet measured.
#   bash experiments/run-frontier3-paged.sh OUTDIR
# FORMS=paged runs the paged tunings alone (and no q_len-4 forms): the
# rows a reference measured in the same call is held to.
# writes OUTDIR/h200-frontier3-paged.jsonl and frontier3-paged.txt. The
# sweeps share one time limit (SWEEP_S seconds); a sweep stopped by it
# resumes when run again into the same OUTDIR (work directory OUTDIR/f3p).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier3-paged.sh OUTDIR}
spec=experiments/h200-frontier3.yaml
mkdir -p "$out"
k=./bin/ktune
[ -x "$k" ] || make build >/dev/null
end=$((SECONDS + ${SWEEP_S:-300}))
sweep() {
  local left=$((end - SECONDS))
  if [ "$left" -le 0 ]; then echo "skipped (time limit): --only $1"; return; fi
  timeout --signal=INT "$left" "$k" sweep "$spec" -o "$out/f3p" --only "$1"
}
# v NAME: the tuning contiguous and paged, or paged alone (FORMS=paged).
v() { if [ "${FORMS:-}" = paged ]; then echo "$1-pg"; else echo "$1|$1-pg"; fi; }
{
  sweep "shape=7b-f16-b1|7b-bf16-b1,variant=$(v b1-s33-pdl),nkv=2048|8192|32768"
  sweep "shape=7b-f16-b1|7b-bf16-b1,variant=$(v b1-s64),nkv=131072"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=$(v b1-s33-pdl),nkv=32768|131072"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=$(v b1-s16-w4-pdl),nkv=2048|8192"
  sweep "shape=7b-f16-b16|7b-bf16-b16,variant=$(v b16-s8-w4-pdl),nkv=2048|8192|32768"
  sweep "shape=7b-f16-b16|7b-bf16-b16,variant=$(v b16-s8),nkv=131072"
  sweep "shape=8b-f16-b16|8b-bf16-b16,variant=$(v b16-f1-pf)"
  [ "${FORMS:-}" = paged ] && exit 0
  sweep "shape=7b-f16-b1-q4,variant=b1-q4-s33-pdl,nkv=8192|32768"
  sweep "shape=7b-f16-b16-q4,variant=b16-q4-s8,nkv=8192|32768"
  sweep "shape=8b-f16-b16-q4,variant=b16-q4g2-f1-pf,nkv=8192|32768"
} 2>&1 | grep -v '^\[' > "$out/frontier3-paged.txt"
tail -n 4 "$out/frontier3-paged.txt"
cp "$out/f3p/results.jsonl" "$out/h200-frontier3-paged.jsonl"
