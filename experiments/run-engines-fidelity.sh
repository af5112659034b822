#!/usr/bin/env bash
# The engines' kernels through ktune and through the engines' own
# benchmark methods, in two calls of one GPU lease (each under ten
# minutes; the second must follow the first while the machine is warm,
# since it reads the first's build cache):
#
#   PHASE=1 bash experiments/run-engines-fidelity.sh OUTDIR
#     vLLM's nvcc build (ktune check, about 8 minutes on one core) in the
#     background while FlashInfer's eight kernels are checked, swept
#     through every gate (experiments/engines/h200-flashinfer.yaml, both
#     forms, 16- and 64-row pages) and timed by FlashInfer's benchmark
#     method (experiments/flashinfer_bench.py); then vLLM's CUBIN and its
#     cache entry, xz-compressed, into OUTDIR/vllm-build.tar.xz, so that a
#     later lease can carry the build instead of making it again
#     (VLLM_BUILD=that file: unpacked into the build cache first).
#   PHASE=2 bash experiments/run-engines-fidelity.sh OUTDIR
#     vLLM's landed graph form and its eager form swept through every
#     gate in one call with ktune's paged forms, then the same CUBIN timed
#     by vLLM's benchmark method over three caches (vLLM's 1024 shared
#     pages, own pages, own pages over a pool of ktune's size).
#
# Needs VLLM_ROOT, TORCH_INCLUDE, CUDA_INCLUDE, FLASHINFER_ROOT and
# CCCL_ROOT as the engines' specs say; KTUNE names the binary (default
# ./bin/ktune). Each phase stops its sweeps in time (END) and writes what
# it has.
set -uo pipefail
out=${1:?usage: PHASE=1|2 run-engines-fidelity.sh OUTDIR}
export KTUNE=${KTUNE:-./bin/ktune}
mkdir -p "$out"
start=$(date +%s)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ktune
case "${PHASE:-}" in
1)
  if [ -n "${VLLM_BUILD:-}" ]; then
    mkdir -p "$cache/builds" && tar xJf "$VLLM_BUILD" -C "$cache/builds"
  fi
  ( "$KTUNE" check experiments/engines/h200-vllm.yaml > "$out/vllm-check.log" 2>&1
    echo "vllm check: exit $? at $(($(date +%s) - start)) s" >> "$out/vllm-check.log" ) &
  vllm=$!
  # The planned form (what FlashInfer's wrapper launches) first, then the
  # split form's 64-row pages, then the points measured in earlier calls.
  ONLY='variant=flashinfer-planned-hnd|flashinfer-planned-nhd;variant=flashinfer-split-hnd|flashinfer-split-nhd,PAGE_SIZE=64;' \
  WORK=/tmp/ktune-fi END=$((start + ${FI_S:-400})) BENCH=1 BENCH_S=${BENCH_S:-110} \
    bash experiments/run-h200-flashinfer.sh "$out/fi"
  echo "flashinfer done at $(($(date +%s) - start)) s"
  wait "$vllm"
  tail -n 1 "$out/vllm-check.log"
  entry=$(grep -l 'paged_attention_v2.cu' $(find "$cache/builds" -name entry.json) 2>/dev/null | head -1)
  if [ -n "$entry" ]; then
    dir=$(dirname "$entry")
    tar cJf "$out/vllm-build.tar.xz" -C "$cache/builds" "$(basename "$(dirname "$dir")")/$(basename "$dir")"
    ls -l "$out/vllm-build.tar.xz"
  fi
  gzip -f "$out/vllm-check.log" "$out/fi/check.log" "$out/fi/h200-flashinfer.jsonl" 2>/dev/null
  ;;
2)
  WORK=/tmp/ktune-vl ONLY='variant=vllm-v2-nvcc|vllm-v2-nvcc-eager' VLLM_S=${VLLM_S:-300} MMA_S=${MMA_S:-60} \
    BENCH=1 BENCH_S=${BENCH_S:-150} bash experiments/run-h200-vllm.sh "$out/vl"
  echo "vllm done at $(($(date +%s) - start)) s"
  gzip -f "$out/vl/h200-vllm.jsonl" "$out/vl/h200-vllm-mma.jsonl" 2>/dev/null
  ;;
*)
  echo "PHASE must be 1 or 2" >&2
  exit 2
  ;;
esac
