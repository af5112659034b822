#!/usr/bin/env bash
# vLLM's paged_attention_v2 (nvcc as the wheel builds it, and NVRTC) and
# ktune's own paged forms at the same shapes, on one GPU in one call:
#   VLLM_ROOT=... CUDA_INCLUDE=... TORCH_INCLUDE=... bash experiments/run-h200-vllm.sh OUTDIR
# KTUNE names the binary (default ./bin/ktune). Writes OUTDIR/h200-vllm.jsonl,
# h200-vllm-mma.jsonl, their sweep logs (gzipped) and report.md, the two
# side by side.
set -uo pipefail
out=${1:?usage: run-h200-vllm.sh OUTDIR}
k=${KTUNE:-./bin/ktune}
mkdir -p "$out"
work=$(mktemp -d)
timeout --signal=INT "${VLLM_S:-300}" "$k" sweep experiments/engines/h200-vllm.yaml -o "$work/vl" -v > "$work/vllm.log" 2>&1
tail -n 3 "$work/vllm.log"
timeout --signal=INT "${MMA_S:-200}" "$k" sweep experiments/h200-vllm-mma.yaml -o "$work/mm" -v > "$work/mma.log" 2>&1
tail -n 3 "$work/mma.log"
cp "$work/vl/results.jsonl" "$out/h200-vllm.jsonl"
cp "$work/mm/results.jsonl" "$out/h200-vllm-mma.jsonl"
gzip -c "$work/vllm.log" > "$out/vllm.log.gz"
gzip -c "$work/mma.log" > "$out/mma.log.gz"
"$k" report "$out/h200-vllm.jsonl" "$out/h200-vllm-mma.jsonl" -o "$work/rep" > /dev/null 2>&1 && cp "$work/rep/report.md" "$out/report.md"
