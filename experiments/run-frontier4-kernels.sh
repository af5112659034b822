#!/usr/bin/env bash
# The two kernel forms of experiments/h200-frontier4-kernels.yaml on one
# GPU, in one call, each next to the forms it is held to:
#  1. PTE (a paged warp's first block-table entries loaded with
#     positions): the batch-1 tunings contiguous, paged (PAGE_SIZE 16 and
#     64) and paged with PTE 1, f16 and bf16, nkv 2048, 8192 and 32768;
#  2. KVSM (K/V staged in shared memory for the column warps): the
#     q_len-4 tunings with and without it and the q_len-1 tunings, nkv
#     8192 and 32768;
# and the bitwise twins (bitwise_with) that gate the same-bits claims.
#   bash experiments/run-frontier4-kernels.sh OUTDIR
# SWEEP_S bounds the sweeps together (default 480 s, so that the call
# stays under 9 minutes with the build); a sweep stopped by it resumes
# when run again with the same WORK (default a fresh temporary folder).
# Writes OUTDIR/h200-frontier4-kernels.jsonl and the gzipped log
# frontier4-kernels.log.gz (every sweep's output, verbose).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-frontier4-kernels.sh OUTDIR}
mkdir -p "$out"
k=${KTUNE:-./bin/ktune}   # KTUNE names the binary
[ -x "$k" ] || make build >/dev/null
spec=experiments/h200-frontier4-kernels.yaml
work=${WORK:-$(mktemp -d)}
end=$((SECONDS + ${SWEEP_S:-480}))
# sweep ONLY: one --only selection of the spec, within the shared limit.
sweep() {
  local left=$((end - SECONDS))
  if [ "$left" -le 0 ]; then echo "skipped (time limit): --only $1"; return; fi
  echo "== --only $1"
  timeout -k 10 --signal=INT "$left" "$k" sweep "$spec" -o "$work/f4k" --only "$1" -v
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
{
  # 1. PTE: each tuning where it is the batch-1 best (h200-frontier3).
  sweep "shape=7b-f16-b1|7b-bf16-b1,variant=b1-s33-pdl|b1-s33-pdl-pg|b1-s33-pdl-pge"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=b1-s16-w4-pdl|b1-s16-w4-pdl-pg|b1-s16-w4-pdl-pge,nkv=2048|8192"
  sweep "shape=8b-f16-b1|8b-bf16-b1,variant=b1-s33-pdl|b1-s33-pdl-pg|b1-s33-pdl-pge,nkv=32768"
  sweep "shape=7b-f16-b1,variant=b1-s33-pdl-pge-bw,nkv=2048|8192"
  # 2. KVSM: the q_len-1 references, then the q_len-4 forms.
  sweep "shape=8b-f16-b1,variant=b1-s16-w4-pdl,nkv=32768"
  sweep "shape=7b-f16-b16|8b-f16-b16,variant=b16-s8-w4-pdl|b16-f1-pf,nkv=8192|32768"
  sweep "shape=7b-f16-b1-q4,variant=b1-q4-s33-pdl|b1-q4-s33-pdl-sm|b1-q4-w4-pdl-sm|b1-q4-s33-pdl-sm-bw,nkv=8192|32768"
  sweep "shape=8b-f16-b1-q4,variant=b1-q4g2-s16-pdl|b1-q4g2-w4-pdl|b1-q4g2-w4-pdl-sm,nkv=8192|32768"
  sweep "shape=7b-f16-b16-q4,variant=b16-q4-s8|b16-q4-s8-sm,nkv=8192|32768"
  sweep "shape=8b-f16-b16-q4,variant=b16-q4g2-f1-pf|b16-q4g2-f1-w4|b16-q4g2-f1-w4-sm|b16-q4g2-s8-w4-sm|b16-q4g2-f1-w4-sm-bw,nkv=8192|32768"
} > "$out/frontier4-kernels.log" 2>&1
grep -E '^(== |skipped)' "$out/frontier4-kernels.log" | tail -n 12
tail -n 4 "$out/frontier4-kernels.log"
cp "$work/f4k/results.jsonl" "$out/h200-frontier4-kernels.jsonl"
gzip -f "$out/frontier4-kernels.log"
echo "records: $(wc -l < "$out/h200-frontier4-kernels.jsonl") in $out/h200-frontier4-kernels.jsonl; work folder $work"
