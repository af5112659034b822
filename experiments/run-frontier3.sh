#!/usr/bin/env bash
# The third frontier on one GPU, in one call: ktune's sweep of
# experiments/h200-frontier3.yaml (each shape's tunings, selected with
# --only as below) and PyTorch SDPA (cuDNN) at every shape of the spec,
# right after, on the same GPU.
#   bash experiments/run-frontier3.sh OUTDIR
# writes OUTDIR/h200-frontier3.jsonl, OUTDIR/sdpa-frontier3.jsonl and the
# logs (frontier3.txt, sdpa.txt). Each part runs under a time limit
# (SWEEP_S, SDPA_S seconds) so that one call of the GPU machine holds
# both; a sweep stopped by its limit resumes when run again into the
# same OUTDIR (its work directory is OUTDIR/f3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier3.sh OUTDIR}
spec=experiments/h200-frontier3.yaml
mkdir -p "$out"
k=./bin/ktune
[ -x "$k" ] || make build >/dev/null
end=$((SECONDS + ${SWEEP_S:-300}))  # one limit for all the sweeps together
sweep() {
  local left=$((end - SECONDS))
  if [ "$left" -le 0 ]; then echo "skipped (time limit): --only $1"; return; fi
  timeout --signal=INT "$left" "$k" sweep "$spec" -o "$out/f3" --only "$1"
}
{
  sweep "shape=7b-f16-b1|7b-bf16-b1,variant=b1-s33-pdl|b1-s64"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=b1-s33-pdl|b1-s16-w4-pdl"
  sweep "shape=7b-f16-b1|7b-bf16-b1|8b-f16-b1|8b-bf16-b1,variant=b1-s64-pdl|b1-s64-pdlend"
  sweep "shape=7b-f16-b1|7b-bf16-b1,variant=b1-s32-pdl,nkv=8192|32768"
  sweep "shape=7b-f16-b1|7b-bf16-b1,variant=b1-fc32x256-pdl,nkv=8192"
  sweep "shape=7b-f16-b1|7b-bf16-b1,variant=b1-fc32x1024-pdl,nkv=32768"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=b1-s16-pdl,nkv=8192|32768"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=b1-fc16x512-pdl,nkv=8192"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=b1-fc16x2048-pdl,nkv=32768"
  sweep "shape=7b-f16-b1-q4,variant=b1-q4-s33-pdl,nkv=8192|32768|131072"
  sweep "shape=8b-f16-b1-q4,variant=b1-q4g2-s16-pdl,nkv=8192|32768|131072"
  sweep "shape=7b-f16-b16-q4,variant=b16-q4-s8,nkv=8192|32768|131072"
  sweep "shape=8b-f16-b16-q4,variant=b16-q4g2-f1-pf,nkv=8192|32768|131072"
  sweep "shape=8b-f16-b1,variant=b1-s16-pdl,nkv=131072"
  sweep "shape=7b-f16-b1-cap|7b-f16-b1-sinks,variant=b1-s33-pdl"
  sweep "shape=8b-f16-b16-cap|8b-f16-b16-sinks,variant=b16-f1-pf"
  sweep "shape=7b-f16-b16|7b-bf16-b16,variant=b16-s8-w4-pdl|b16-s8"
  sweep "shape=8b-f16-b16|8b-bf16-b16,variant=b16-f1-pf|b16-s8-w4-pdl"
} 2>&1 | grep -v '^\[' > "$out/frontier3.txt"
tail -n 4 "$out/frontier3.txt"
cp "$out/f3/results.jsonl" "$out/h200-frontier3.jsonl"
# cuDNN at the plain shapes only: SDPA's decode here is one query token
# with no soft-cap or sinks, so the option shapes have no reference row.
plain=$(grep -o "name: [a-z0-9-]*-b[0-9]*," "$spec" | sed 's/name: //; s/,//' | paste -sd,)
timeout "${SDPA_S:-180}" python3 experiments/sdpa_ref.py --shapes-from "$spec" --shape-name "$plain" --backends cudnn --probes cold,graph \
  -o "$out/sdpa-frontier3.jsonl" > "$out/sdpa.txt" 2>&1
tail -n 12 "$out/sdpa.txt"
