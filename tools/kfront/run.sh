#!/usr/bin/env bash
# Builds kfront and runs it on this machine's GPU (CUDA 13 toolkit at
# /usr/local/cuda): checks of gqa.cu and mma.cu against a float64 reference,
# then timings. Also prints ptxas resource lines and SASS instruction counts
# of the default configurations. Usage: bash run.sh [quick]
set -euo pipefail
cd "$(dirname "$0")"
CUDA=${CUDA:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
K=../../kernels
OUTDIR=/tmp/kfront
mkdir -p "$OUTDIR"

echo "== build"
$NVCC -arch=sm_90 -O3 -lineinfo -std=c++17 -o kfront kfront.cu -lcuda -lnvrtc

echo "== ptxas resources (default defines, SPLITS=64)"
for f in gqa mma; do
  for nr in 1 2 4; do for pf in 0 1; do [ $f = gqa ] && [ $pf = 0 ] && continue
    [ $f = gqa ] && [ $nr = 1 ] && continue
    $NVCC -arch=sm_90 -O3 -lineinfo -cubin -Xptxas -v -I$K -DHEAD_DIM=128 -DKV_F16=1 -DSPLITS=64 -DNR=$nr -DPF=$pf \
      -o "$OUTDIR/$f-nr$nr-pf$pf.cubin" $K/$f.cu 2>&1 | grep -E "attn_partial|registers|spill" | sed "s/^/$f NR=$nr PF=$pf: /" || true; done
  done
done
for c in "$OUTDIR"/gqa-nr4-pf1.cubin "$OUTDIR"/mma-nr1-pf1.cubin; do
  $CUDA/bin/cuobjdump -sass "$c" > "${c%.cubin}.sass" 2>/dev/null || true
  s="${c%.cubin}.sass"
  [ -n "${OUT:-}" ] && cp "$s" "$OUT/" || true
  echo "$(basename $c): HMMA $(grep -c HMMA $s) LDG $(grep -c 'LDG' $s) SHFL $(grep -c SHFL $s) MUFU $(grep -c MUFU $s) STL $(grep -c STL $s) LDL $(grep -c LDL $s) MOVM $(grep -c MOVM $s) PRMT $(grep -c PRMT $s)"
done

echo "== run"
./kfront "$K" "${1:-}"
