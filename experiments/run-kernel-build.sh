#!/usr/bin/env bash
# Compiles the tensor-core kernels for every KV type and head_dim with nvcc
# (sm_90) and prints ptxas's registers, spills and shared memory per
# configuration; with OLD=dir (a checkout of the previous kernels/) also
# compares the SASS of the f16, head_dim 128 builds with the old sources'.
# Usage: OUT=dir bash experiments/run-kernel-build.sh
set -uo pipefail
cd "$(dirname "$0")/.."
CUDA=${CUDA:-/usr/local/cuda}
OUTDIR=${OUT:-/tmp/kbuild}
mkdir -p "$OUTDIR"
build() { # src dir defines...
  local f=$1 dir=$2; shift 2
  $CUDA/bin/nvcc -arch=sm_90 -O3 -cubin -std=c++17 -Xptxas -v -I"$dir" "$@" -o "$OUTDIR/k.cubin" "$dir/$f.cu" 2>&1 |
    grep -E "registers|spill|error|warning" | grep -v "^ptxas info    : Compiling" | sed "s|^|$f $*: |"
}
for kv in "-DKV_F16=1" "-DKV_F16=0 -DKV_BF16=1" "-DKV_F16=0 -DKV_FP8=1"; do
  for d in 64 128 256; do
    w=8; [ $d = 256 ] && w=4
    build mma kernels -DHEAD_DIM=$d $kv -DSPLITS=64 -DWARPS=$w -DMINROWS=128 -DCW=2
  done
  build mma_fused kernels -DHEAD_DIM=128 $kv -DSPLITS=64 -DWARPS=8 -DMINROWS=128
done
build d2 kernels -DHEAD_DIM=128 -DKV_F16=0 -DKV_BF16=1 -DSPLITS=32 -DNR=4
if [ -n "${OLD:-}" ]; then
  for f in mma mma_fused; do
    for cfg in "-DSPLITS=64 -DWARPS=8 -DMINROWS=128" "-DSPLITS=8 -DWARPS=4 -DMINROWS=256 -DPF=1"; do
      for dir in kernels "$OLD"; do
        $CUDA/bin/nvcc -arch=sm_90 -O3 -cubin -std=c++17 -I"$dir" -DHEAD_DIM=128 -DKV_F16=1 -DCW=2 $cfg -o "$OUTDIR/k.cubin" "$dir/$f.cu" &&
          $CUDA/bin/cuobjdump -sass "$OUTDIR/k.cubin" | grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed 's|/\*[0-9a-f]*\*/||g; s|;.*||' > "$OUTDIR/$(basename $dir).sass"
      done
      if cmp -s "$OUTDIR/kernels.sass" "$OUTDIR/$(basename $OLD).sass"; then echo "$f $cfg: SASS identical to the old sources"; else echo "$f $cfg: SASS DIFFERS ($(diff "$OUTDIR/kernels.sass" "$OUTDIR/$(basename $OLD).sass" | grep -c '^[<>]') lines)"; fi
    done
  done
fi
rm -f "$OUTDIR"/*.cubin "$OUTDIR"/*.sass
