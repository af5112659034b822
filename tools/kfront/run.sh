#!/usr/bin/env bash
# Builds kfront and runs it on this machine's GPU (CUDA 13 toolkit at
# /usr/local/cuda): checks of gqa.cu and mma.cu against a float64 reference
# at the frontier spec's gate, then cold (read flush) and graph timings.
# Also prints the ptxas resource lines and SASS load forms of two
# configurations. Writes kfront.csv, kfront.log and the SASS under $OUT when
# set. Usage: bash run.sh [quick|full|fused]; fused checks and times
# mma_fused.cu against mma.cu at the best known tunings.
set -euo pipefail
cd "$(dirname "$0")"
CUDA=${CUDA:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
K=../../kernels
OUTDIR=${OUT:-/tmp/kfront}
MODE=${1:-full}
mkdir -p "$OUTDIR"

echo "== build"
# KF_PDL: launch the combine as a programmatic dependent where a config
# asks for it (cuLaunchKernelEx); without it those configs run plainly.
$NVCC -arch=sm_90 -O3 -lineinfo -std=c++17 -DKF_PDL=1 -o kfront kfront.cu -lcuda -lnvrtc ||
  $NVCC -arch=sm_90 -O3 -lineinfo -std=c++17 -o kfront kfront.cu -lcuda -lnvrtc

echo "== ptxas resources and load forms"
CFGS=("mma -DSPLITS=64 -DWARPS=8 -DMINROWS=256 -DCW=2" "mma -DSPLITS=16 -DWARPS=8 -DMINROWS=1024 -DCW=2")
if [ "$MODE" = fused ]; then
  CFGS=("mma_fused -DSPLITS=64 -DWARPS=8 -DMINROWS=128" "mma_fused -DSPLITS=8 -DWARPS=4 -DMINROWS=256")
fi
for cfg in "${CFGS[@]}"; do
  set -- $cfg; f=$1; shift
  tag=$(echo "$f $*" | tr -c 'A-Za-z0-9\n' '_')
  $NVCC -arch=sm_90 -O3 -cubin -Xptxas -v -I$K -DHEAD_DIM=128 -DKV_F16=1 "$@" -o "$OUTDIR/$tag.cubin" $K/$f.cu 2>&1 |
    grep -E "registers|spill|error" | sed "s/^/$f $*: /" || true
  $CUDA/bin/cuobjdump -sass "$OUTDIR/$tag.cubin" > "$OUTDIR/$tag.sass" 2>/dev/null || true
  echo "$tag: HMMA $(grep -c HMMA "$OUTDIR/$tag.sass") LDG $(grep -c LDG "$OUTDIR/$tag.sass") forms: $(grep -o 'LDG[.A-Z0-9_]*' "$OUTDIR/$tag.sass" | sort | uniq -c | tr '\n' ' ')"
done
rm -f "$OUTDIR"/*.cubin

echo "== run"
./kfront "$K" "$MODE" "$OUTDIR/kfront.csv" 2>&1 | tee "$OUTDIR/kfront.log"
