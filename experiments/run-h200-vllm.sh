#!/usr/bin/env bash
# vLLM's paged_attention_v2 (nvcc as the wheel builds it, and NVRTC) and
# ktune's own paged forms at the same shapes, on one GPU in one call:
#   VLLM_ROOT=... CUDA_INCLUDE=... TORCH_INCLUDE=... bash experiments/run-h200-vllm.sh OUTDIR
# KTUNE names the binary (default ./bin/ktune); ONLY and ONLY_MMA narrow
# the two sweeps (--only expressions). Writes OUTDIR/h200-vllm.jsonl,
# h200-vllm-mma.jsonl, their sweep logs (gzipped) and report.md, the two
# side by side; then (BENCH=1) vllm-bench.jsonl: the same nvcc-built CUBIN
# timed by vLLM's own benchmark method (experiments/vllm_bench.py), for
# ktune's numbers against the engine's.
set -uo pipefail
out=${1:?usage: run-h200-vllm.sh OUTDIR}
k=${KTUNE:-./bin/ktune}
mkdir -p "$out"
work=${WORK:-$(mktemp -d)}   # WORK: a fixed folder, so a second call resumes the sweep
mkdir -p "$work"
only=() only_mma=()
[ -n "${ONLY_MMA:-}" ] && only_mma=(--only "$ONLY_MMA")
[ -n "${ONLY:-}" ] && only=(--only "$ONLY")
timeout --signal=INT "${VLLM_S:-300}" "$k" sweep experiments/engines/h200-vllm.yaml "${only[@]}" -o "$work/vl" -v > "$work/vllm.log" 2>&1
tail -n 3 "$work/vllm.log"
timeout --signal=INT "${MMA_S:-200}" "$k" sweep experiments/h200-vllm-mma.yaml "${only_mma[@]}" -o "$work/mm" -v > "$work/mma.log" 2>&1
tail -n 3 "$work/mma.log"
cp "$work/vl/results.jsonl" "$out/h200-vllm.jsonl"
cp "$work/mm/results.jsonl" "$out/h200-vllm-mma.jsonl"
gzip -c "$work/vllm.log" > "$out/vllm.log.gz"
gzip -c "$work/mma.log" > "$out/mma.log.gz"
"$k" report "$out/h200-vllm.jsonl" "$out/h200-vllm-mma.jsonl" -o "$work/rep" > /dev/null 2>&1 && cp "$work/rep/report.md" "$out/report.md"
if [ -n "${BENCH:-}" ]; then
  # The CUBIN of vLLM's nvcc build, from ktune's build cache.
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/ktune
  entry=$(grep -l 'paged_attention_v2.cu' $(find "$cache" -name entry.json) 2>/dev/null | head -1)
  if [ -z "$entry" ]; then
    echo "no nvcc build of paged_attention_v2.cu in $cache"
  else
    timeout "${BENCH_S:-120}" python3 experiments/vllm_bench.py --cubin "$(dirname "$entry")/artifact.cubin" -o "$out/vllm-bench.jsonl"
  fi
fi
